// reduce_scatter for the collective driver: rank r ends with block r (count elements) of the
// element-wise sum of the ranks' n·count inputs (nccl-tests' reduce_scatter.cu), called as the
// executor calls it (mpi_comm.h: MPI_Reduce_scatter with equal counts).
#include "calibrate/calibrate_collective.h"
#include "executor/runtime/mpi_comm.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int n) {
  return {count * n, count};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  reduce_scatter_equal(comm, send, recv, count, n);
}

}  // namespace

const CollectiveBench kReduceScatterBench{Collective::reduce_scatter, buffers, run};

}  // namespace shardplan
