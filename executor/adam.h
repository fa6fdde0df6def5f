// Adam over a flat fp32 parameter range — the whole buffer, or under ZeRO this rank's shard of it —
// with its two moment buffers charged as optimizer bytes (8 per parameter: fp32 m and v).
#pragma once

#include <cstdint>
#include <span>

#include "executor/adam_config.h"
#include "executor/kernels.h"
#include "executor/tensor_allocator.h"

namespace shardplan {

struct AdamState {
  Buffer<float> m;   // first moment
  Buffer<float> v;   // second moment
  int64_t step = 0;  // updates taken
};

// Zeroed state for `count` parameters.
AdamState adam_state(TensorAllocator& alloc, int64_t count);

// One update of params from grads (both state.m.size() long) on `dev`; increments state.step.
void adam_step(Kernels<float>& dev, const AdamConfig& config, AdamState& state,
               std::span<float> params, std::span<const float> grads);

// Part of what the state covers: `count` parameters at `params`, their gradients at `grads` and
// their moments at `state_offset` (a ZeRO-1/2 rank's piece of one unit, in the full flat buffer).
struct AdamPiece {
  float* params = nullptr;
  const float* grads = nullptr;
  int64_t state_offset = 0;
  int64_t count = 0;
};

// One update of every piece (disjoint parts of the state); increments state.step once.
void adam_step(Kernels<float>& dev, const AdamConfig& config, AdamState& state,
               std::span<const AdamPiece> pieces);

// The update of `count` elements as a host loop: the CPU backend's kernel (bias_correction1/2 are
// 1 − β1^t and 1 − β2^t).
void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                 float* params, const float* grads, float* m, float* v, int64_t count);

}  // namespace shardplan
