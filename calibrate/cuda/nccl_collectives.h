// The NCCL side of the calibration's collective driver (calibrate/calibrate_collective.h): each
// collective's NCCL call, taking the same count as its MPI call in the CollectiveBench tables
// (nccl-tests' all_reduce.cu, reduce_scatter.cu, all_gather.cu, alltoall.cu, broadcast.cu,
// sendrecv.cu), and a runner that times them on GPU buffers.
#pragma once

#include <memory>

#include "calibrate/calibrate_collective.h"
#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda/nccl_comm.h"

namespace shardplan {

// One call of `c` on `comm`, on `stream`; `count` as CollectiveBench::run takes it.
void nccl_collective(Collective c, const float* send, float* recv, int64_t count,
                     const NcclComm& comm, cudaStream_t stream);

// A group's NCCL communicator (made from its MPI communicator: collective over it) and device
// buffers from `alloc`; calls on the context's compute stream, finish() waits for them.
class NcclCollectiveRunner final : public CollectiveRunner {
 public:
  NcclCollectiveRunner(MPI_Comm group, CudaContext& ctx, CudaKernels<float>& kernels,
                       TensorAllocator& alloc);
  MPI_Comm group() const override { return group_; }
  void prepare(const CollectiveBench& b, int64_t count) override;
  void run() override;
  void finish() override;
  std::vector<float> received() override;

 private:
  float* input();  // the send buffer, or in place the receive buffer
  MPI_Comm group_;
  NcclComm comm_;
  CudaContext& ctx_;
  CudaKernels<float>& kernels_;
  TensorAllocator& alloc_;
  const CollectiveBench* bench_ = nullptr;
  int64_t count_ = 0;
  Buffer<float> send_, recv_;
};

}  // namespace shardplan
