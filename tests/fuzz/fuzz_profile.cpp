// A calibration profile, as `--profile FILE` reads it (read_profile_file: profile_from_json, which
// validates), overlaid on a cluster (apply_profile) and looked up as the cost model looks it up.
#include "core/presets.h"
#include "core/profile.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  static const Cluster local_cpu = load_cluster("local-cpu");  // not what is fuzzed
  const std::string file = "profile.json";
  return fuzz::refusal_is_fine([&] {
    const Profile p = profile_from_json(fuzz::parse_bytes(data, size, file), file);
    apply_profile(local_cpu, p, file);
    gemm_rate_flops(p, 4096, 1024, 512);
    gemm_rate_flops(p, 1, 1, 1);
    kernel_rate_per_s(p, MemoryKernel::norm_forward, 1e6);
    find_collective_fit(p, Collective::all_reduce, 0, 2, false);
  });
}
