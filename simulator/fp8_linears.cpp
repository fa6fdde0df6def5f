#include "simulator/fp8_linears.h"

namespace shardplan {

std::optional<Fp8Linears> fp8_linears(const Training& t, const Layout& l, const DeviceRates& r,
                                      const ExecutionOptions& x) {
  if (t.fp8 == Fp8Recipe::none) return std::nullopt;
  const bool amax_pass = t.fp8 == Fp8Recipe::current;
  const double e = static_cast<double>(dtype_bytes(t.dtype));
  return Fp8Linears{.rates = fp8_gemm_rates(r),
                    .cast_bytes = (amax_pass ? 2 : 1) * e + fp8_copies_bytes(t.fp8, r.fp8_tn_only),
                    .cast_launches = amax_pass ? 2.0 : 1.0,
                    .weight_casts = fp8_weights_cached(t, l, x) ? 1.0 / l.num_microbatches : 1.0};
}

bool fp8_weights_cached(const Training& t, const Layout& l, const ExecutionOptions& x) {
  return t.fp8 != Fp8Recipe::none && x.fp8_weight_cache && l.zero < 3;
}

}  // namespace shardplan
