// all_gather for the collective driver: every rank ends with the ranks' count-element buffers
// concatenated in rank order (nccl-tests' all_gather.cu; MPI_Allgather).
#include "calibrate/calibrate_collective.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int n) {
  return {count, count * n};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  MPI_Allgather(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count), MPI_FLOAT,
                comm);
}

}  // namespace

const CollectiveBench kAllGatherBench{Collective::all_gather, buffers, run};

}  // namespace shardplan
