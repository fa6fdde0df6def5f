// Prices every row of a set with the cost model (simulator/estimate.h), in parallel: the layout
// and model validated first (what validation rejects is refused with its field), then the step
// time, the worst stage's peak memory and whether it fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "validate/fidelity_set.h"

namespace shardplan {

struct PricedRow {
  std::string refusal;  // empty: priced; else why not ("layers unknown", "rejected: layout.pp")
  std::string refusal_detail;  // the full message behind a refusal, for the first example
  double step_time_s = 0;
  int64_t reserved_bytes = 0;  // what the worst stage's allocator reserves (max_memory_reserved)
  int64_t first_stage_reserved_bytes = 0;  // the same on the first stage
  int64_t runtime_reserved_bytes = 0;  // CUDA context, NCCL buffers: what nvidia-smi adds
  bool fits = true;
};

// One PricedRow per row of `s`, in order, on `threads` threads (0: the hardware's count).
std::vector<PricedRow> price_set(const FidelitySet& s, unsigned threads = 0);

}  // namespace shardplan
