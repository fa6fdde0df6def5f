// send_recv for the collective driver: each rank sends its buffer to the next rank and receives
// the previous rank's, all at once, around the group's ring (nccl-tests' sendrecv.cu;
// MPI_Sendrecv). On 2 ranks both directions of the link carry a buffer at the same time.
#include "calibrate/calibrate_collective.h"

namespace shardplan {

namespace {

BufferElements buffers(int64_t count, int) {
  return {count, count};
}

void run(const float* send, float* recv, int64_t count, MPI_Comm comm) {
  int rank = 0, n = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  const int c = static_cast<int>(count);
  MPI_Sendrecv(send, c, MPI_FLOAT, (rank + 1) % n, 0, recv, c, MPI_FLOAT, (rank + n - 1) % n, 0,
               comm, MPI_STATUS_IGNORE);
}

}  // namespace

const CollectiveBench kSendRecvBench{Collective::send_recv, buffers, run};

}  // namespace shardplan
