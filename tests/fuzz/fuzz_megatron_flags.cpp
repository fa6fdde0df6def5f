// `--megatron "FLAGS"`: the string split into words, parsed against the model and resolved
// against layout_context().
#include <vector>

#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/layout_context.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const std::vector<std::string> words = split_words(fuzz::as_text(data, size));
    fuzz::resolve_and_print(parse_megatron_flags(words, fuzz::layout_context().model),
                            "--megatron");
  });
}
