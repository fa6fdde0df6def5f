#include "core/alpha_beta_fit.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

namespace shardplan {

AlphaBeta fit_alpha_beta(const std::vector<SizeTime>& points) {
  assert(points.size() >= 2);
  // Normal equations of the weighted problem, w = 1/t²:
  //   [Σw   Σws ] [alpha]   [Σwt ]
  //   [Σws  Σws²] [beta ] = [Σwst]
  double sw = 0, sws = 0, sws2 = 0, swt = 0, swst = 0;
  for (const auto& p : points) {
    assert(p.time_s > 0 && p.bytes >= 0);
    const double w = 1 / (p.time_s * p.time_s);
    sw += w;
    sws += w * p.bytes;
    sws2 += w * p.bytes * p.bytes;
    swt += w * p.time_s;
    swst += w * p.bytes * p.time_s;
  }
  const double det = sw * sws2 - sws * sws;
  assert(det > 0 && "the sweep needs two distinct sizes");
  AlphaBeta f{(swt * sws2 - sws * swst) / det, (sw * swst - sws * swt) / det};
  if (f.alpha_s < 0) f = {0, swst / sws2};  // the same problem with alpha fixed at 0
  if (!(f.beta_s_per_byte > 0))
    throw std::runtime_error("the measured time does not grow with the size");
  return f;
}

double max_relative_error(const AlphaBeta& fit, const std::vector<SizeTime>& points) {
  double worst = 0;
  for (const auto& p : points)
    worst = std::max(worst,
                     std::abs(fit.alpha_s + fit.beta_s_per_byte * p.bytes - p.time_s) / p.time_s);
  return worst;
}

}  // namespace shardplan
