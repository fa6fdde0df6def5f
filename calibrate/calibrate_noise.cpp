#include "calibrate/calibrate_noise.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "calibrate/calibrate_timing.h"
#include "core/statistics.h"

namespace shardplan {

namespace {

// Register arithmetic only, so that a quantum's time varies only with what takes the core away.
double timed_work_s(int64_t iterations) {
  const double start = MPI_Wtime();
  volatile float sink = register_work(iterations);
  (void)sink;
  return MPI_Wtime() - start;
}

}  // namespace

std::vector<NoiseTiming> time_noise(MPI_Comm comm, const std::vector<double>& quantum_s,
                                    int quanta) {
  // Iterations per second from the fastest of a few short runs; the ranks agree on the smallest
  // count so that every rank does the same work.
  constexpr int64_t kProbe = 1'000'000;
  double probe_s = timed_work_s(kProbe);
  for (int i = 0; i < 4; ++i) probe_s = std::min(probe_s, timed_work_s(kProbe));
  std::vector<NoiseTiming> out;
  for (const double target : quantum_s) {
    int64_t iterations = std::max<int64_t>(1, static_cast<int64_t>(target / probe_s * kProbe));
    MPI_Allreduce(MPI_IN_PLACE, &iterations, 1, MPI_INT64_T, MPI_MIN, comm);
    std::vector<double> mine, longest;
    for (int q = 0; q < quanta; ++q) {
      MPI_Barrier(comm);
      double t = timed_work_s(iterations);
      mine.push_back(t);
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
      longest.push_back(t);
    }
    double fastest = median(mine), slowest = fastest;
    MPI_Allreduce(MPI_IN_PLACE, &fastest, 1, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    const double mean_max = std::accumulate(longest.begin(), longest.end(), 0.0) / quanta;
    out.push_back({fastest, slowest, mean_max, median(std::move(longest)), quanta});
  }
  return out;
}

double noise_share(const NoiseTiming& t) {
  return t.mean_max_s / t.median_max_s - 1;
}

void print_noise(std::FILE* out, const std::vector<NoiseTiming>& timings) {
  fmt::print(out,
             "# noise: fixed work quanta on every rank at once, started together (FWQ); the cost "
             "model prices medians, and the profile's noise is the first row's last column\n");
  fmt::print(out, "# {:>10} {:>7} {:>14} {:>18}\n", "quantum", "quanta", "slowest rank's",
             "mean of each");
  fmt::print(out, "# {:>10} {:>7} {:>14} {:>18}\n", "(fastest", "", "median", "quantum's longest");
  fmt::print(out, "# {:>10} {:>7} {:>14} {:>18}\n", "rank)", "", "", "over their median");
  for (const NoiseTiming& n : timings)
    fmt::print(out, "  {:>7.3f} ms {:>7} {:>+13.1f}% {:>+17.1f}%\n", n.fastest_median_s * 1e3,
               n.quanta, 100 * (n.slowest_median_s / n.fastest_median_s - 1), 100 * noise_share(n));
  fmt::print(out, "\n");
}

}  // namespace shardplan
