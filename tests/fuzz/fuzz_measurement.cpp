// A measured.json of `execute --out`, as `compare` and `calibrate --from` read it
// (read_measurement_file: measurement_from_json), then the medians they take of it.
#include "core/measurement.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const Measurement m =
        measurement_from_json(fuzz::parse_bytes(data, size, "measured.json"), "measured.json");
    median_step_time_s(m);
    step_time_spread_s(m);
    median_gemm_s(m);
    median_action_s(m);
  });
}
