// The fixed-work-quantum noise benchmark on every rank at once: quanta near the asked length,
// every rank with the same figures, the slowest rank's median at least the fastest's.
#include "calibrate/calibrate_noise.h"

#include <mpi.h>

#include <catch2/catch.hpp>

namespace shardplan {

TEST_CASE("noise: fixed work quanta, the same figures on every rank", "[calibrate][mpi]") {
  const std::vector<NoiseTiming> t = time_noise(MPI_COMM_WORLD, {1e-3, 4e-3}, 20);
  REQUIRE(t.size() == 2);
  for (const NoiseTiming& n : t) {
    CHECK(n.quanta == 20);
    CHECK(n.slowest_median_s >= n.fastest_median_s);
    CHECK(n.mean_max_s > 0);
    // A quantum's longest time is at least the slowest rank's, so their median is at least its.
    CHECK(n.median_max_s >= n.slowest_median_s);
    CHECK(noise_share(n) == Approx(n.mean_max_s / n.median_max_s - 1));
    double mine[4] = {n.fastest_median_s, n.slowest_median_s, n.mean_max_s, n.median_max_s}, low[4],
           high[4];
    MPI_Allreduce(mine, low, 4, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine, high, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < 4; ++i) CHECK(low[i] == high[i]);
  }
  // The work is the ranks' smallest count for the asked length: a quantum lasts about that long,
  // or longer on a loaded machine, and 4 times the work takes longer than the single work.
  CHECK(t[0].fastest_median_s > 0.5e-3);
  CHECK(t[1].fastest_median_s > t[0].fastest_median_s);
}

}  // namespace shardplan
