// all_reduce for the collective driver: every rank ends with the element-wise sum of the ranks'
// buffers (nccl-tests' all_reduce.cu; MPI_Allreduce).
#include "executor/calibrate_collective.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int) {
  return {count, count};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
}

}  // namespace

const CollectiveBench kAllReduceBench{Collective::all_reduce, buffers, run};

}  // namespace shardplan
