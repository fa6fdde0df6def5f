// Test helpers for the cost model: model and topology presets by name, trainings, and a layout
// from its fields.
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/json_reader.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/presets.h"
#include "core/training.h"
#include "simulator/device_efficiency.h"

namespace shardplan::test {

inline Model preset_model(const std::string& name) {
  const std::string path = std::string(SHARDPLAN_SOURCE_DIR) + "/models/" + name + ".json";
  return model_from_json(read_json_file(path), path);
}

// A topology preset scaled to `nodes` nodes.
inline Cluster preset_cluster(const std::string& name, int nodes) {
  return load_cluster(name, nodes);
}

inline Training training(int64_t global_batch, int64_t seq_len) {
  Training t;
  t.global_batch = global_batch;
  t.seq_len = seq_len;
  return t;
}

// 1 TFLOP/s for 16-bit GEMMs and attention, 2 for FP8 GEMMs, 100 GB/s of memory: times counted by
// hand.
inline DeviceRates round_rates() {
  return {.matmul_flops_per_s = 1e12,
          .fp8_matmul_flops_per_s = 2e12,
          .attention_forward_flops_per_s = 1e12,
          .attention_backward_flops_per_s = 1e12,
          .memory_bytes_per_s = 1e11};
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
