// Adam over a flat fp32 parameter range — the whole buffer, or under ZeRO this rank's shard of it —
// with its two moment buffers charged as optimizer bytes (8 per parameter: fp32 m and v).
#pragma once

#include <cstdint>
#include <span>

#include "executor/tensor_allocator.h"

namespace shardplan {

// Defaults: Kingma & Ba 2015, Algorithm 1 (β1 = 0.9, β2 = 0.999, ε = 1e-8); weight_decay > 0 is
// AdamW's decoupled decay (Loshchilov & Hutter 2019, Algorithm 2).
struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

struct AdamState {
  Buffer<float> m;   // first moment
  Buffer<float> v;   // second moment
  int64_t step = 0;  // updates taken
};

// Zeroed state for `count` parameters.
AdamState adam_state(TensorAllocator& alloc, int64_t count);

// One update of params from grads (both state.m.size() long); increments state.step.
void adam_step(const AdamConfig& config, AdamState& state, std::span<float> params,
               std::span<const float> grads);

}  // namespace shardplan
