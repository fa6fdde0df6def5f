// Our cluster JSON, as `--cluster FILE` reads it (load_cluster: cluster_from_json, which
// validates), then what `describe` and the plan files read of it: spans, NCCL channels, the JSON.
#include "core/cluster.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardplan;
  return fuzz::refusal_is_fine([&] {
    const Cluster c =
        cluster_from_json(fuzz::parse_bytes(data, size, "cluster.json"), "cluster.json");
    for (size_t i = 0; i < c.levels.size(); ++i) {
      c.level_span(i);
      nccl_channels(c.levels[i]);
    }
    cluster_to_json(c);
  });
}
