#include "calibrate/cuda/nccl_collectives.h"

#include <vector>

#include "executor/cuda/cuda_check.h"

namespace shardplan {

namespace {
constexpr int kRoot = 0;  // broadcast's, as the MPI driver's
}  // namespace

void nccl_collective(Collective c, const float* send, float* recv, int64_t count,
                     const NcclComm& comm, cudaStream_t stream) {
  const auto n = static_cast<size_t>(count);
  ncclComm_t h = comm.get();
  switch (c) {
    case Collective::all_reduce:
      SHARDPLAN_NCCL_CHECK(ncclAllReduce(send, recv, n, ncclFloat, ncclSum, h, stream));
      return;
    case Collective::reduce_scatter:  // count: each rank's part
      SHARDPLAN_NCCL_CHECK(ncclReduceScatter(send, recv, n, ncclFloat, ncclSum, h, stream));
      return;
    case Collective::all_gather:  // count: each rank's part
      SHARDPLAN_NCCL_CHECK(ncclAllGather(send, recv, n, ncclFloat, h, stream));
      return;
    case Collective::all_to_all:  // count: each block; one send and one receive per peer
      SHARDPLAN_NCCL_CHECK(ncclGroupStart());
      for (int peer = 0; peer < comm.size(); ++peer) {
        SHARDPLAN_NCCL_CHECK(ncclSend(send + peer * count, n, ncclFloat, peer, h, stream));
        SHARDPLAN_NCCL_CHECK(ncclRecv(recv + peer * count, n, ncclFloat, peer, h, stream));
      }
      SHARDPLAN_NCCL_CHECK(ncclGroupEnd());
      return;
    case Collective::broadcast:
      SHARDPLAN_NCCL_CHECK(ncclBroadcast(send, recv, n, ncclFloat, kRoot, h, stream));
      return;
    case Collective::send_recv: {  // to the next rank, from the previous, around the ring
      const int size = comm.size(), rank = comm.rank();
      SHARDPLAN_NCCL_CHECK(ncclGroupStart());
      SHARDPLAN_NCCL_CHECK(ncclSend(send, n, ncclFloat, (rank + 1) % size, h, stream));
      SHARDPLAN_NCCL_CHECK(ncclRecv(recv, n, ncclFloat, (rank + size - 1) % size, h, stream));
      SHARDPLAN_NCCL_CHECK(ncclGroupEnd());
      return;
    }
  }
}

NcclCollectiveRunner::NcclCollectiveRunner(MPI_Comm group, CudaContext& ctx,
                                           CudaKernels<float>& kernels, TensorAllocator& alloc)
    : group_(group), comm_(group), ctx_(ctx), kernels_(kernels), alloc_(alloc) {}

void NcclCollectiveRunner::prepare(const CollectiveBench& b, int64_t count) {
  const BufferElements e = b.buffers(count, comm_.size());
  bench_ = &b;
  count_ = count;
  send_ = alloc_.allocate<float>(MemoryCategory::buffers, b.in_place ? 0 : e.send,
                                 "collective send buffer");
  recv_ = alloc_.allocate<float>(MemoryCategory::buffers, e.recv, "collective receive buffer");
  std::vector<float> values(static_cast<size_t>(e.send));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = send_value(comm_.rank(), static_cast<int64_t>(i));
  kernels_.copy_from_host(input(), values.data(),
                          static_cast<int64_t>(values.size() * sizeof(float)));
  kernels_.synchronize();
}

float* NcclCollectiveRunner::input() {
  return bench_->in_place ? recv_.data() : send_.data();
}

void NcclCollectiveRunner::run() {
  nccl_collective(bench_->collective, input(), recv_.data(), count_, comm_, ctx_.compute());
}

void NcclCollectiveRunner::finish() {
  SHARDPLAN_CUDA_CHECK(cudaStreamSynchronize(ctx_.compute()));
}

std::vector<float> NcclCollectiveRunner::received() {
  std::vector<float> out(static_cast<size_t>(recv_.size()));
  kernels_.copy_to_host(out.data(), recv_.data(), recv_.bytes());
  return out;
}

}  // namespace shardplan
