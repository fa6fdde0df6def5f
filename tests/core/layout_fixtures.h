// Inputs for the layout, training and plan tests: the model presets (models/), DGX H100 nodes
// (topologies/dgx-h100.json) and a training of a given batch and sequence length.
#pragma once

#include <cstdint>

#include "core/cluster.h"
#include "core/presets.h"
#include "core/training.h"

namespace shardplan::test {

inline Cluster dgx_h100(int nodes) {
  return load_cluster("dgx-h100", nodes);
}

inline Training training(int64_t global_batch, int64_t seq_len) {
  Training t;
  t.global_batch = global_batch;
  t.seq_len = seq_len;
  return t;
}

}  // namespace shardplan::test
