#include "executor/state/adam.h"

#include <cassert>
#include <cmath>
#include <type_traits>

#include "executor/elementwise.h"

namespace shardplan {

AdamState adam_state(TensorAllocator& alloc, int64_t count, bool master_weights) {
  AdamState s;
  s.m = alloc.allocate<float>(MemoryCategory::optimizer, count, "Adam first moment");
  s.v = alloc.allocate<float>(MemoryCategory::optimizer, count, "Adam second moment");
  if (master_weights)
    s.master = alloc.allocate_for_overwrite<float>(MemoryCategory::optimizer, count,
                                                   "fp32 master weights");
  return s;
}

template <class T>
void adam_step(Kernels<T>& dev, const AdamConfig& config, AdamState& state, std::span<T> params,
               std::span<const std::type_identity_t<T>> grads) {
  assert(static_cast<int64_t>(params.size()) == state.m.size() && grads.size() == params.size());
  const AdamPiece<T> whole{params.data(), grads.data(), 0, state.m.size()};
  adam_step<T>(dev, config, state, std::span<const AdamPiece<T>>(&whole, 1));
}

template <class T>
void adam_step(Kernels<T>& dev, const AdamConfig& config, AdamState& state,
               std::span<const AdamPiece<T>> pieces) {
  ++state.step;
  // Bias corrections 1 − β^t (Kingma & Ba 2015, Algorithm 1), in double: β2^t is close to 1.
  const auto t = static_cast<double>(state.step);
  const auto bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta1), t));
  const auto bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(config.beta2), t));
  for (const AdamPiece<T>& p : pieces) {
    assert(p.state_offset >= 0 && p.state_offset + p.count <= state.m.size());
    float* const m = state.m.data() + p.state_offset;
    float* const v = state.v.data() + p.state_offset;
    if (state.master.empty()) {
      if constexpr (std::is_same_v<T, float>)
        dev.adam_update(config, bc1, bc2, p.params, p.grads, m, v, nullptr, p.count);
      else
        assert(false && "weights narrower than fp32 are updated through a master copy");
    } else {
      dev.adam_update(config, bc1, bc2, state.master.data() + p.state_offset, p.grads, m, v,
                      p.params, p.count);
    }
  }
}

template <class G>
void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                 float* master, const G* grads, float* m, float* v, G* params, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    ew::adam_update(master[i], static_cast<float>(grads[i]), m[i], v[i], config.lr, config.beta1,
                    config.beta2, config.eps, config.weight_decay, bias_correction1,
                    bias_correction2);
    if (params != nullptr) params[i] = static_cast<G>(master[i]);
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                  \
  template void adam_step<T>(Kernels<T>&, const AdamConfig&, AdamState&, std::span<T>,            \
                             std::span<const std::type_identity_t<T>>);                           \
  template void adam_step<T>(Kernels<T>&, const AdamConfig&, AdamState&,                          \
                             std::span<const AdamPiece<T>>);                                      \
  template void adam_update<T>(const AdamConfig&, float, float, float*, const T*, float*, float*, \
                               T*, int64_t);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE
template void adam_update<double>(const AdamConfig&, float, float, float*, const double*, float*,
                                  float*, double*, int64_t);

}  // namespace shardplan
