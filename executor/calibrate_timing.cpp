#include "executor/calibrate_timing.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/statistics.h"

namespace shardplan {

namespace {

// Seconds per call over `calls` back-to-back calls, at the slowest rank.
double time_batch_s(const std::function<void()>& op, int calls, MPI_Comm comm,
                    const std::function<double()>& excluded_s, const std::function<void()>& drain) {
  MPI_Barrier(comm);
  const double excluded_before = excluded_s ? excluded_s() : 0;
  const double start = MPI_Wtime();
  for (int i = 0; i < calls; ++i) op();
  if (drain) drain();
  const double excluded = excluded_s ? excluded_s() - excluded_before : 0;
  double per_call = (MPI_Wtime() - start - excluded) / calls;
  MPI_Allreduce(MPI_IN_PLACE, &per_call, 1, MPI_DOUBLE, MPI_MAX, comm);
  return per_call;
}

}  // namespace

double median_time_s(const std::function<void()>& op, const TimingOptions& t, MPI_Comm comm,
                     const std::function<double()>& excluded_s,
                     const std::function<void()>& drain) {
  assert(t.warmup >= 1 && t.samples >= 1);
  if (drain) drain();  // nothing issued before is timed
  const double warm_s = time_batch_s(op, t.warmup, comm, excluded_s, drain);
  const int calls = static_cast<int>(std::clamp(std::ceil(t.min_sample_s / warm_s), 1.0, 1e6));
  std::vector<double> samples;
  for (int i = 0; i < t.samples; ++i)
    samples.push_back(time_batch_s(op, calls, comm, excluded_s, drain));
  return median(std::move(samples));
}

}  // namespace shardplan
