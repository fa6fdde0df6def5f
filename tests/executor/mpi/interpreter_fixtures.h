// What the interpreter tests (CPU backend, and CUDA against CPU) train: gpt-tiny on fp32 (or bf16
// mixed-precision) steps of 4 sequences of 16 byte tokens, on layouts given by their degrees, on
// MPI_COMM_WORLD's ranks.
#pragma once

#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/presets.h"
#include "core/training.h"
#include "executor/data.h"
#include "executor/interpreter.h"
#include "executor/state/param_layout.h"

namespace shardplan::test {

constexpr int kSteps = 3;
constexpr int64_t kSeq = 16;
constexpr int64_t kGlobalBatch = 4;

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

// Megatron-LM's --bf16: bf16 weights, activations and gradients, fp32 master weights.
inline Training bf16_training() {
  Training t = fp32_training();
  t.dtype = t.grad_dtype = Dtype::bf16;
  t.master_weights = true;
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

// ‖a − b‖ / ‖b‖ over two whole models' flat parameters. Relative to the whole model's norm:
// Adam divides every gradient by its own running RMS, so elements whose gradient is near zero
// take steps of up to lr from rounding alone, and no per-element relative bound holds for them in
// any summation order.
inline double relative_norm_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double d = double{a[i]} - b[i];
    diff2 += d * d;
    ref2 += double{b[i]} * b[i];
  }
  return std::sqrt(diff2 / ref2);
}

// How close a run must come to a reference run of the same steps.
struct Tolerances {
  double loss = 0;    // relative, every step
  double params = 0;  // relative to the whole model's norm (relative_norm_error)
  // At least this far from fp32's parameters (0: no bound): a narrower precision must move them.
  double min_params = 0;
};

// The full state after a step under `from` in `from_training`, loaded under `to` in `to_training`
// and gathered again: the same bits (loading is the inverse of gathering; the parameters are fp32
// in either precision, the master weights under bf16), with Adam's step carried.
inline void check_state_round_trip(Layout from, Layout to,
                                   const Training& from_training = fp32_training(),
                                   const Training& to_training = fp32_training()) {
  const Model m = tiny_model();
  for (Layout* l : {&from, &to})
    l->num_microbatches = static_cast<int>(kGlobalBatch / (l->micro_batch * l->dp));
  INFO(to_string(from) << " " << enum_name(from_training.dtype, kDtypeNames) << " -> "
                       << to_string(to) << " " << enum_name(to_training.dtype, kDtypeNames));
  RankInterpreter a(m, from_training, from, text(), InterpreterSettings{});
  a.run_step(0);
  const FullState saved = a.gather_full_state();
  InterpreterSettings other;
  other.seed = 99;  // different initial values, all overwritten by the load
  RankInterpreter b(m, to_training, to, text(), other);
  b.load_full_state(saved);
  const FullState loaded = b.gather_full_state();
  if (a.program().rank != 0) return;
  REQUIRE(saved.params.size() == static_cast<size_t>(param_layout(m, whole_model(m)).total));
  CHECK(saved.adam_step == 1);
  CHECK(loaded.adam_step == 1);
  CHECK(loaded.params == saved.params);
  CHECK(loaded.adam_m == saved.adam_m);
  CHECK(loaded.adam_v == saved.adam_v);
}

}  // namespace shardplan::test
