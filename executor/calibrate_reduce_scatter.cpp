// reduce_scatter for the collective driver: rank r ends with block r (count elements) of the
// element-wise sum of the ranks' n·count inputs (nccl-tests' reduce_scatter.cu;
// MPI_Reduce_scatter_block).
#include "executor/calibrate_collective.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int n) {
  return {count * n, count};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
}

}  // namespace

const CollectiveBench kReduceScatterBench{Collective::reduce_scatter, buffers, run};

}  // namespace shardplan
