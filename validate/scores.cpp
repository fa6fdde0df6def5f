#include "validate/scores.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "core/statistics.h"

namespace shardplan {

ErrorStats error_stats(const std::vector<double>& errors) {
  ErrorStats s;
  s.count = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::vector<double> abs(errors.size());
  std::ranges::transform(errors, abs.begin(), [](double e) { return std::fabs(e); });
  const double n = static_cast<double>(errors.size());
  s.mape_pct = 100 * std::accumulate(abs.begin(), abs.end(), 0.0) / n;
  s.median_abs_pct = 100 * median(abs);
  s.max_abs_pct = 100 * *std::ranges::max_element(abs);
  s.signed_mean_pct = 100 * std::accumulate(errors.begin(), errors.end(), 0.0) / n;
  return s;
}

double FitsConfusion::accuracy() const {
  return count() == 0 ? 0 : static_cast<double>(fits_ran + no_fit_crashed) / count();
}

void FitsConfusion::add(bool predicted_fits, bool ran) {
  if (predicted_fits)
    ++(ran ? fits_ran : fits_crashed);
  else
    ++(ran ? no_fit_ran : no_fit_crashed);
}

namespace {

// Ranks 1..n, tied values sharing the mean of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::sort(order, [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank = (static_cast<double>(i + j) / 2) + 1;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
  assert(a.size() == b.size());
  if (a.size() < 2) return std::nullopt;
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double mean = static_cast<double>(a.size() + 1) / 2;  // of 1..n, ties or not
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (va == 0 || vb == 0) return std::nullopt;
  return cov / std::sqrt(va * vb);
}

std::optional<double> pick_regret(const std::vector<GroupMember>& group) {
  const GroupMember* pick = nullptr;
  double best_measured = 0;
  for (const auto& m : group) {
    if (best_measured == 0 || m.measured_s < best_measured) best_measured = m.measured_s;
    if (m.predicted_fits && (!pick || m.predicted_s < pick->predicted_s)) pick = &m;
  }
  if (!pick) return std::nullopt;
  return pick->measured_s / best_measured - 1;
}

}  // namespace shardplan
