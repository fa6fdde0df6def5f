// `--megatron "FLAGS"`: the string split into words, parsed against the model and resolved
// against layout_context().
#include <sstream>
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/layout_context.h"

namespace {

// tools/cli_inputs.cpp's split at white space, which is private to the CLI (linking it would pull
// in CLI11 and the simulator).
std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const std::vector<std::string> words = split_words(fuzz::as_text(data, size));
    fuzz::resolve_and_print(parse_megatron_flags(words, fuzz::layout_context().model),
                            "--megatron");
  });
}
