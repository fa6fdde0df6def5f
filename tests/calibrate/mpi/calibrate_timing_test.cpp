// Calls timed one at a time as a step makes them: the work before each is not timed, every call is
// charged at the slowest rank's time, and every rank holds the same figure.
#include "calibrate/calibrate_timing.h"

#include <mpi.h>

#include <catch2/catch.hpp>

namespace shardplan {

TEST_CASE("single calls: the work before each untimed, the slowest rank's time",
          "[calibrate][mpi]") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int before = 0, calls = 0;
  const TimingOptions t{2, 5, 1e-3};
  // 5 ms of work before each call, a call of 1 ms on rank 0 and 2 ms on the others.
  const double s = median_single_call_s(
      [&] {
        ++calls;
        busy_for(rank == 0 ? 1e-3 : 2e-3);
      },
      [&] {
        ++before;
        busy_for(5e-3);
      },
      t, MPI_COMM_WORLD);
  CHECK(before == 7);
  CHECK(calls == 7);
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(s >= (ranks > 1 ? 2e-3 : 1e-3));
  CHECK(s < 5e-3);  // the work before is left out (unless the machine stalls for 3 ms)
  double low = 0, high = 0;
  MPI_Allreduce(&s, &low, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&s, &high, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(low == high);
}

TEST_CASE("busy_for: register work for at least the time asked", "[calibrate][mpi]") {
  const double start = MPI_Wtime();
  busy_for(3e-3);
  CHECK(MPI_Wtime() - start >= 3e-3);
}

}  // namespace shardplan
