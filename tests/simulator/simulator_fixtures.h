// Test helpers for the cost model: model presets by name, small clusters and trainings built as
// structs, and a layout from its fields.
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/json_reader.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan::test {

inline Model preset_model(const std::string& name) {
  const std::string path = std::string(SHARDPLAN_SOURCE_DIR) + "/models/" + name + ".json";
  return model_from_json(read_json_file(path), path);
}

// nodes × 8 GPUs joined by NVLink inside a node and InfiniBand across, one NIC per GPU.
// A100-SXM4-80GB: 312 TFLOP/s bf16 dense, 2039 GB/s HBM2e (NVIDIA A100 datasheet); NVLink 3:
// 600 GB/s per GPU both directions together; HDR InfiniBand 200 Gb/s = 25 GB/s per NIC.
inline Cluster dgx_a100(int nodes) {
  Cluster c;
  c.name = "test-dgx-a100";
  c.nodes = nodes;
  c.devices_per_node = 8;
  c.device = Device{"A100-SXM4-80GB", 80, 1, 2039, 19.5, 156, 312, 312};
  c.levels = {InterconnectLevel{"nvlink", LinkKind::nvlink, 8, 300, 0, 0, 2, 1},
              InterconnectLevel{"infiniband", LinkKind::infiniband, 0, 0, 8, 25, 5, 1}};
  return c;
}

// H100-SXM5-80GB: 989 TFLOP/s bf16 dense, 3350 GB/s HBM3 (NVIDIA H100 datasheet); NVLink 4:
// 900 GB/s per GPU both directions together; 400 Gb/s = 50 GB/s per NIC.
inline Cluster dgx_h100(int nodes) {
  Cluster c;
  c.name = "test-dgx-h100";
  c.nodes = nodes;
  c.devices_per_node = 8;
  c.device = Device{"H100-SXM5-80GB", 80, 1, 3350, 67, 494.5, 989, 989};
  c.levels = {InterconnectLevel{"nvlink", LinkKind::nvlink, 8, 450, 0, 0, 2, 1},
              InterconnectLevel{"infiniband", LinkKind::infiniband, 0, 0, 8, 50, 5, 1}};
  return c;
}

inline Training training(int64_t global_batch, int64_t seq_len) {
  Training t;
  t.global_batch = global_batch;
  t.seq_len = seq_len;
  return t;
}

// A layout with dp derived from the world and num_microbatches from the global batch.
inline Layout layout(int64_t world, int64_t global_batch, int tp, int pp, int micro_batch = 1,
                     int zero = 0) {
  Layout l;
  l.tp = tp;
  l.pp = pp;
  l.dp = static_cast<int>(world / (int64_t{tp} * pp));
  l.micro_batch = micro_batch;
  l.num_microbatches = static_cast<int>(global_batch / (int64_t{micro_batch} * l.dp));
  l.zero = zero;
  return l;
}

}  // namespace shardplan::test
