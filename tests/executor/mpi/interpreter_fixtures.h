// What the MPI interpreter tests share: the fp32 training they run (gpt-tiny, 4 sequences of 16
// tokens a step), its text, the world's size and a layout of the four parallelism degrees.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "core/layout.h"
#include "core/presets.h"
#include "core/training.h"
#include "executor/data.h"

namespace shardplan::test {

inline constexpr int64_t kSeq = 16;
inline constexpr int64_t kGlobalBatch = 4;

inline Model tiny_model() {
  return load_model(std::string(SHARDPLAN_SOURCE_DIR) + "/models/gpt-tiny.json");
}

inline Training fp32_training() {
  Training t;
  t.global_batch = kGlobalBatch;
  t.seq_len = kSeq;
  t.dtype = t.grad_dtype = Dtype::fp32;
  t.master_weights = false;
  return t;
}

inline const TextTokens& text() {
  static const TextTokens tokens =
      load_text_tokens(std::string(SHARDPLAN_SOURCE_DIR) + "/" + kDefaultTextFile, kSeq + 1);
  return tokens;
}

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// dp × tp × pp × cp with num_microbatches filling kGlobalBatch.
inline Layout layout(int dp, int tp, int pp, int cp = 1) {
  Layout l;
  l.dp = dp;
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.num_microbatches = static_cast<int>(kGlobalBatch / (l.micro_batch * l.dp));
  return l;
}

}  // namespace shardplan::test
