// A Hugging Face config.json, as `--model DIR` reads it: model_from_json hands it to
// model_from_hf_config (which validates) on its model_type, called here directly so that mutated
// inputs stay on this reader; then the parameter counts `describe` prints next.
#include "core/model.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  const std::string file = "hf/config.json";
  return fuzz::refusal_is_fine([&] {
    const Model m = model_from_hf_config(fuzz::parse_bytes(data, size, file), file);
    count_parameters(m);
  });
}
