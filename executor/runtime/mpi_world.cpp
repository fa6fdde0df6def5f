// world_comm.h over MPI_COMM_WORLD.
#include <mpi.h>

#include "executor/runtime/world_comm.h"

namespace shardplan {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int world_rank_or_none() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized ? world_rank() : -1;
}

WaitSite world_wait(WaitKind kind) {
  static int64_t waits = 0;  // the main thread's alone
  return {kind, "world", {}, ++waits};
}

void world_barrier() {
  const WaitScope wait(world_wait(WaitKind::barrier));
  MPI_Barrier(MPI_COMM_WORLD);
}

namespace {
double reduced(double x, MPI_Op op) {
  double out = 0;
  const WaitScope wait(world_wait(WaitKind::all_reduce));
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return out;
}
}  // namespace

double world_max(double x) {
  return reduced(x, MPI_MAX);
}

double world_sum(double x) {
  return reduced(x, MPI_SUM);
}

int64_t world_broadcast(int64_t x, int root) {
  const WaitScope wait(world_wait(WaitKind::broadcast));
  MPI_Bcast(&x, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  return x;
}

}  // namespace shardplan
