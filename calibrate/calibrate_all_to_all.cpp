// all_to_all for the collective driver: rank r sends block p (count elements) of its buffer to
// rank p and ends with block r of every rank, in rank order (nccl-tests' alltoall.cu;
// MPI_Alltoall).
#include "calibrate/calibrate_collective.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int n) {
  return {count * n, count * n};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  MPI_Alltoall(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count), MPI_FLOAT,
               comm);
}

}  // namespace

const CollectiveBench kAllToAllBench{Collective::all_to_all, buffers, run};

}  // namespace shardplan
