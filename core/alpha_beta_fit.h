// Fitting Hockney's alpha-beta model t = alpha + beta·bytes (core/profile.h, CollectiveFit) to a
// collective's size sweep.
#pragma once

#include <vector>

namespace shardplan {

struct SizeTime {
  double bytes = 0;
  double time_s = 0;
};

struct AlphaBeta {
  double alpha_s = 0;          // latency
  double beta_s_per_byte = 0;  // 1 / bandwidth
};

// Least squares on the relative error, min Σ ((alpha + beta·bytes − t) / t)², i.e. weights 1/t²
// (weighted least squares, normal equations): a sweep from 8 B to MiBs spans four orders of
// magnitude in time, and plain least squares would fit the largest sizes alone. A negative alpha
// (latency below the timer's resolution) is refitted with alpha = 0. Needs two distinct sizes and
// positive times; throws std::runtime_error when the time does not grow with size.
AlphaBeta fit_alpha_beta(const std::vector<SizeTime>& points);

// The largest |fit − t| / t over the points: how well the two numbers describe the sweep.
double max_relative_error(const AlphaBeta& fit, const std::vector<SizeTime>& points);

}  // namespace shardplan
