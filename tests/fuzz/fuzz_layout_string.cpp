// The compact layout string of `--layout`, parsed and resolved against layout_context().
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/layout_context.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    fuzz::resolve_and_print(parse_layout_string(fuzz::as_text(data, size), "--layout"), "--layout");
  });
}
