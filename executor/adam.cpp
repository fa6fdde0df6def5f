#include "executor/adam.h"

#include <cassert>
#include <cmath>

#include "executor/elementwise.h"

namespace shardplan {

AdamState adam_state(TensorAllocator& alloc, int64_t count) {
  AdamState s;
  s.m = alloc.allocate<float>(MemoryCategory::optimizer, count, "Adam first moment");
  s.v = alloc.allocate<float>(MemoryCategory::optimizer, count, "Adam second moment");
  return s;
}

void adam_step(Kernels<float>& dev, const AdamConfig& config, AdamState& state,
               std::span<float> params, std::span<const float> grads) {
  assert(static_cast<int64_t>(params.size()) == state.m.size() && grads.size() == params.size());
  const AdamPiece whole{params.data(), grads.data(), 0, state.m.size()};
  adam_step(dev, config, state, std::span(&whole, 1));
}

void adam_step(Kernels<float>& dev, const AdamConfig& config, AdamState& state,
               std::span<const AdamPiece> pieces) {
  ++state.step;
  // Bias corrections 1 − β^t (Kingma & Ba 2015, Algorithm 1), in double: β2^t is close to 1.
  const auto t = static_cast<double>(state.step);
  const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta1), t));
  const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta2), t));
  for (const AdamPiece& p : pieces) {
    assert(p.state_offset >= 0 && p.state_offset + p.count <= state.m.size());
    dev.adam_update(config, bc1, bc2, p.params, p.grads, state.m.data() + p.state_offset,
                    state.v.data() + p.state_offset, p.count);
  }
}

void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                 float* params, const float* grads, float* m, float* v, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    ew::adam_update(params[i], grads[i], m[i], v[i], config.lr, config.beta1, config.beta2,
                    config.eps, config.weight_decay, bias_correction1, bias_correction2);
}

}  // namespace shardplan
