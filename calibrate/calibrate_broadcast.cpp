// broadcast for the collective driver: every rank but the root (rank 0) ends with the root's
// buffer (nccl-tests' broadcast.cu; MPI_Bcast, which works in place: the root sends from its send
// buffer, the others receive into their receive buffer).
#include "calibrate/calibrate_collective.h"

namespace shardplan {

namespace {

constexpr int kRoot = 0;

BufferElements buffers(int64_t count, int) {
  return {count, count};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // MPI_Bcast only reads the root's buffer; its signature is not const.
  float* buffer = rank == kRoot ? const_cast<float*>(send) : recv;
  MPI_Bcast(buffer, static_cast<int>(count), MPI_FLOAT, kRoot, comm);
}

}  // namespace

const CollectiveBench kBroadcastBench{Collective::broadcast, buffers, run};

}  // namespace shardplan
