// Adam over a flat parameter range — the whole buffer, or under ZeRO this rank's shard of it —
// with its state charged as optimizer bytes: fp32 m and v (8 per parameter), and under mixed
// precision an fp32 master copy of the weights (4 more: Micikevicius et al. 2018, §3.1; ZeRO §3.1's
// K = 12), which the update steps and rounds into the bf16 weights the layers compute with.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>

#include "executor/kernels.h"
#include "executor/state/adam_config.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

struct AdamState {
  Buffer<float> m;       // first moment
  Buffer<float> v;       // second moment
  Buffer<float> master;  // the fp32 weights under mixed precision; empty when they are fp32
  int64_t step = 0;      // updates taken
};

// Zeroed state for `count` parameters, with a master copy when `master_weights` (its values are
// the caller's to set).
AdamState adam_state(TensorAllocator& alloc, int64_t count, bool master_weights);

// Part of what the state covers: `count` parameters at `params`, their gradients at `grads` and
// their moments (and master weights) at `state_offset` (a ZeRO-1/2 rank's piece of one unit, in
// the full flat buffer).
template <class T>
struct AdamPiece {
  T* params = nullptr;
  const T* grads = nullptr;
  int64_t state_offset = 0;
  int64_t count = 0;
};

// One update of params from grads (both state.m.size() long) on `dev`; increments state.step.
template <class T>
void adam_step(Kernels<T>& dev, const AdamConfig& config, AdamState& state, std::span<T> params,
               std::span<const std::type_identity_t<T>> grads);

// One update of every piece (disjoint parts of the state); increments state.step once.
template <class T>
void adam_step(Kernels<T>& dev, const AdamConfig& config, AdamState& state,
               std::span<const AdamPiece<T>> pieces);

// The update of `count` elements as a host loop: the CPU backend's kernel (bias_correction1/2 are
// 1 − β1^t and 1 − β2^t): fp32 `master` from gradients in G, and each updated weight rounded to
// `params` unless that is null (kernels.h's Kernels::adam_update).
template <class G>
void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                 float* master, const G* grads, float* m, float* v, G* params, int64_t count);

}  // namespace shardplan
