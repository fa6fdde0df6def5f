// `--deepspeed-config FILE`: a DeepSpeed JSON read into a layout spec and resolved against
// layout_context().
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/layout_context.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  const std::string file = "ds_config.json";
  return fuzz::refusal_is_fine([&] {
    fuzz::resolve_and_print(layout_from_deepspeed(fuzz::parse_bytes(data, size, file), file), file);
  });
}
