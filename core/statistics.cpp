#include "core/statistics.h"

#include <algorithm>
#include <cassert>

namespace shardplan {

double quantile(std::vector<double> values, double q) {
  assert(!values.empty() && q >= 0 && q <= 1);
  std::sort(values.begin(), values.end());
  const double at = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (at - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

double median(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

}  // namespace shardplan
