#include "calibrate/calibrate_timing.h"

#include <algorithm>
#include <array>
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

float register_work(int64_t iterations) {
  std::array<float, 8> x{1.0f, 1.1f, 1.2f, 1.3f, 1.4f, 1.5f, 1.6f, 1.7f};
  for (int64_t i = 0; i < iterations; ++i)
    for (float& v : x) v = v * 0.999999f + 1e-6f;
  float sum = 0;
  for (float v : x) sum += v;
  return sum;
}

void busy_for(double seconds) {
  constexpr int64_t kChunk = 10'000;  // ~10 us of work between clock reads
  const double end = MPI_Wtime() + seconds;
  volatile float sink = 0;
  while (MPI_Wtime() < end) sink = sink + register_work(kChunk);
}

double median_single_call_s(const std::function<void()>& op, const std::function<void()>& before,
                            const TimingOptions& t, MPI_Comm comm) {
  assert(t.warmup >= 1 && t.samples >= 1);
  std::vector<double> samples;
  for (int i = 0; i < t.warmup + t.samples; ++i) {
    before();
    const double s = time_batch_s(op, 1, comm, {}, {});
    if (i >= t.warmup) samples.push_back(s);
  }
  return median(std::move(samples));
}

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
