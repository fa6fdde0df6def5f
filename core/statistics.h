// The order statistics the tools summarise repeated measurements with: medians of timing samples
// and of steps, quartiles for their spread.
#pragma once

#include <vector>

namespace shardplan {

// The q-quantile (0 ≤ q ≤ 1) of `values`, not empty, linear between neighbours (Hyndman & Fan
// 1996, definition 7, the default of R and NumPy).
double quantile(std::vector<double> values, double q);

// The middle value; the mean of the two middle ones for an even count.
double median(std::vector<double> values);

}  // namespace shardplan
