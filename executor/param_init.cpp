#include "executor/param_init.h"

#include <cassert>
#include <cmath>

#include "executor/counter_rng.h"

namespace shardplan {

namespace {
// nanoGPT's (and GPT-2's) standard deviation for weights and embeddings.
constexpr double kInitStd = 0.02;
}  // namespace

template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed,
                     std::span<T> params) {
  assert(static_cast<int64_t>(params.size()) == layout.total);
  // Residual projections scaled by 1/√(2·num_layers) (Radford et al. 2019, §2.3; nanoGPT's c_proj).
  const double residual_std = kInitStd / std::sqrt(2.0 * m.num_layers);
  for (const ParamTensor& t : layout.tensors) {
    const uint64_t stream = hash_name(t.init_name);
    T* out = params.data() + t.offset;
    for (int64_t i = 0; i < t.count(); ++i) {
      const auto full = static_cast<uint64_t>(full_index(t, i));
      switch (t.init) {
        case ParamInit::normal:
          out[i] = static_cast<T>(kInitStd * counter_normal(seed, stream, full));
          break;
        case ParamInit::residual_normal:
          out[i] = static_cast<T>(residual_std * counter_normal(seed, stream, full));
          break;
        case ParamInit::zeros:
          out[i] = T(0);
          break;
        case ParamInit::ones:
          out[i] = T(1);
          break;
      }
    }
  }
}

template void init_parameters<float>(const Model&, const ParamLayout&, uint64_t, std::span<float>);
template void init_parameters<double>(const Model&, const ParamLayout&, uint64_t,
                                      std::span<double>);

}  // namespace shardplan
