#include "executor/state/param_init.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "executor/counter_rng.h"

namespace shardplan {

namespace {
// nanoGPT's (and GPT-2's) standard deviation for weights and embeddings.
constexpr double kInitStd = 0.02;
}  // namespace

template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed, ElementRange range,
                     std::span<T> part) {
  assert(static_cast<int64_t>(part.size()) == range.count());
  // Residual projections scaled by 1/√(2·num_layers) (Radford et al. 2019, §2.3; nanoGPT's c_proj).
  const double residual_std = kInitStd / std::sqrt(2.0 * m.num_layers);
  for (const ParamTensor& t : layout.tensors) {
    const int64_t first = std::max<int64_t>(0, range.begin - t.offset),
                  last = std::min(t.count(), range.end - t.offset);
    if (first >= last) continue;
    const uint64_t stream = hash_name(t.init_name);
    T* out = part.data() + (t.offset + first - range.begin);  // element `first` of t
    for (int64_t i = first; i < last; ++i) {
      const auto full = static_cast<uint64_t>(full_index(t, i));
      T& x = out[i - first];
      switch (t.init) {
        case ParamInit::normal:
          x = static_cast<T>(kInitStd * counter_normal(seed, stream, full));
          break;
        case ParamInit::residual_normal:
          x = static_cast<T>(residual_std * counter_normal(seed, stream, full));
          break;
        case ParamInit::zeros:
          x = T(0);
          break;
        case ParamInit::ones:
          x = T(1);
          break;
      }
    }
  }
}

template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed,
                     std::span<T> params) {
  init_parameters(m, layout, seed, {0, layout.total}, params);
}

template void init_parameters<float>(const Model&, const ParamLayout&, uint64_t, std::span<float>);
template void init_parameters<double>(const Model&, const ParamLayout&, uint64_t,
                                      std::span<double>);
template void init_parameters<float>(const Model&, const ParamLayout&, uint64_t, ElementRange,
                                     std::span<float>);

}  // namespace shardplan
