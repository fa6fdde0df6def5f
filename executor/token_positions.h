// Where a rank's tokens sit in their whole sequence under context parallelism, as a value the CPU
// loops and the CUDA kernels (causal mask, position embedding) both evaluate. Megatron-LM's
// get_batch_on_this_cp_rank cuts a sequence into 2·cp chunks and gives cp rank r chunks r and
// 2·cp−1−r, in that order, so every rank gets the same share of the causal mask's work.
#pragma once

#include <cstdint>

#include "executor/host_device.h"

namespace shardplan {

struct TokenPositions {
  int64_t seq = 1;  // tokens per sequence on each rank: seq_len / cp
  int cp = 1;
  int rank = 0;  // the cp rank whose tokens these are

  // Position in the whole sequence of this rank's i-th token of a sequence (0 ≤ i < seq).
  SHARDPLAN_HD int64_t of(int64_t i) const {
    if (cp == 1) return i;
    const int64_t chunk = seq / 2;
    return i < chunk ? rank * chunk + i : (2 * cp - 1 - rank) * chunk + (i - chunk);
  }
};

}  // namespace shardplan
