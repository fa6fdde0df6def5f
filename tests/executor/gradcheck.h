// Finite-difference gradient checking for the executor's layers, in double precision: a layer's
// output is reduced to a scalar loss Σ out ⊙ R with a fixed random R, so its backward pass starts
// from dy = R, and each analytic gradient element is compared with a central difference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "executor/counter_rng.h"

namespace shardplan::test {

// n values N(0, scale²) from `stream`, deterministic.
inline std::vector<double> random_values(int64_t n, uint64_t stream, double scale = 1.0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * counter_normal(7, stream, static_cast<uint64_t>(i));
  return v;
}

inline double dot(std::span<const double> a, std::span<const double> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct GradCheck {
  double max_error = 0;  // max |analytic − numeric| over the elements checked
  double max_grad = 0;   // max |numeric|, for scale
  int checked = 0;
};

// Central differences (L(x + h) − L(x − h))/2h with h = 1e-5: truncation error ~h²·|L'''| ≈ 1e-10,
// rounding ~1e-16·|L|/h ≈ 1e-11·|L|. Checks every element when x has at most max_checks of them,
// else max_checks evenly spaced ones.
inline GradCheck check_gradient(std::span<double> x, std::span<const double> analytic,
                                const std::function<double()>& loss, int64_t max_checks = 96) {
  const double h = 1e-5;
  GradCheck r;
  const auto n = static_cast<int64_t>(x.size());
  const int64_t stride = std::max<int64_t>(1, n / max_checks);
  for (int64_t i = 0; i < n; i += stride) {
    const auto k = static_cast<size_t>(i);
    const double saved = x[k];
    x[k] = saved + h;
    const double up = loss();
    x[k] = saved - h;
    const double down = loss();
    x[k] = saved;
    const double numeric = (up - down) / (2 * h);
    r.max_error = std::max(r.max_error, std::abs(analytic[k] - numeric));
    r.max_grad = std::max(r.max_grad, std::abs(numeric));
    ++r.checked;
  }
  return r;
}

}  // namespace shardplan::test
