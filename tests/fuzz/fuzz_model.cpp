// Our model JSON, as `--model FILE` reads it (load_model: model_from_json, which validates), then
// the parameter counts `describe` prints next.
#include "core/model.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const Model m = model_from_json(fuzz::parse_bytes(data, size, "model.json"), "model.json");
    count_parameters(m);
  });
}
