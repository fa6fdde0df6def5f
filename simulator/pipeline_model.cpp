#include "simulator/pipeline_model.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace shardplan {

int64_t inflight_chunk_microbatches(const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  const int64_t m = l.num_microbatches;
  switch (l.schedule) {
    case Schedule::gpipe:
      return m * l.vpp;
    case Schedule::one_f_one_b:
      return std::min<int64_t>(l.pp - stage, m);
    case Schedule::interleaved:
      return std::min<int64_t>(2 * (l.pp - stage - 1) + int64_t{l.vpp - 1} * l.pp + 1, m * l.vpp);
  }
  return m;
}

double pipeline_time_s(const Layout& l, std::span<const double> stage_time_s) {
  assert(stage_time_s.size() == static_cast<size_t>(l.pp));
  const double slowest = *std::max_element(stage_time_s.begin(), stage_time_s.end());
  const double sum = std::accumulate(stage_time_s.begin(), stage_time_s.end(), 0.0);
  const double chunks = static_cast<double>(int64_t{l.num_microbatches} * l.vpp);
  return ((chunks - 1) * slowest + sum) / l.vpp;
}

double bubble_fraction(const Layout& l, std::span<const double> stage_time_s) {
  const double total = pipeline_time_s(l, stage_time_s);
  if (total <= 0) return 0;
  const double slowest = *std::max_element(stage_time_s.begin(), stage_time_s.end());
  return 1 - l.num_microbatches * slowest / total;
}

}  // namespace shardplan
