// The CUDA backend's RankRuntime (executor/runtime/cuda_rank.h).
#include <mpi.h>

#include <array>
#include <cstddef>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda/cuda_streams.h"
#include "executor/cuda/device_memory.h"
#include "executor/cuda/nccl_comm.h"
#include "executor/cuda/nccl_p2p.h"
#include "executor/cuda/node_device.h"
#include "executor/runtime/cuda_rank.h"
#include "executor/runtime/mpi_comm.h"
#include "executor/runtime/rank_runtime.h"

namespace shardplan {

namespace {

// The stream a group's layer collectives run on (the tp and cp groups'; any other group's TpComm
// calls come from actions already on that group's stream).
Stream own_stream(Group g) {
  switch (g) {
    case Group::tp:
      return Stream::tp_comm;
    case Group::cp:
      return Stream::cp_comm;
    case Group::ep:
      return Stream::ep_comm;
    case Group::pp:
      return Stream::pp_comm;
    default:
      return Stream::dp_comm;
  }
}

class CudaRuntime final : public RankRuntime {
 public:
  CudaRuntime(const Program& p, const CudaSettings& settings)
      : ctx_(node_device(), settings.matmul),
        memory_(ctx_),
        alloc_("rank " + std::to_string(p.rank), 0, &memory_),
        f32_kernels_(ctx_, alloc_),
        bf16_kernels_(ctx_, alloc_),
        streams_(ctx_),
        groups_(p) {
    // Every rank creates its groups' communicators in the same order (kGroupNames), each rank in
    // exactly one group of each kind: every ncclCommInitRank meets its group's other members.
    for (const auto& [g, name] : kGroupNames) {
      nccl_[static_cast<size_t>(g)].emplace(groups_.get(g));
      comms_[static_cast<size_t>(g)].emplace(*nccl_[static_cast<size_t>(g)], g, own_stream(g), ctx_,
                                             streams_);
    }
    embedding_nccl_.emplace(groups_.embedding());
    if (groups_.embedding() != MPI_COMM_NULL)
      embedding_.emplace(*embedding_nccl_, Group::pp, Stream::pp_comm, ctx_, streams_);
    p2p_.emplace(p, ctx_);
  }

  ~CudaRuntime() override {
    cudaDeviceSynchronize();  // no kernel or collective still uses what is freed below
  }

  Kernels<float>& f32_kernels() override { return f32_kernels_; }
  Kernels<bf16>& bf16_kernels() override { return bf16_kernels_; }
  TensorAllocator& allocator() override { return alloc_; }
  StepStreams& streams() override { return streams_; }
  GroupComm& group(Group g) override { return *comms_[static_cast<size_t>(g)]; }
  GroupComm* embedding_group() override { return embedding_ ? &*embedding_ : nullptr; }
  PipelineP2p& p2p() override { return *p2p_; }

  void release_bytes_after_use(Buffer<std::byte> b) override {
    CudaEvent used;
    used.record(ctx_.stream());
    held_.emplace_back(std::move(used), std::move(b));
  }
  void finish_releases(bool wait) override {
    held_.remove_if([&](auto& h) {
      if (wait) SHARDPLAN_CUDA_CHECK(cudaEventSynchronize(h.first.get()));
      return wait || h.first.done();
    });
  }

 private:
  // Destroyed in reverse: buffers before the allocator, communicators before the context.
  CudaContext ctx_;
  DeviceMemory memory_;
  TensorAllocator alloc_;
  CudaKernels<float> f32_kernels_;  // fp32 training
  CudaKernels<bf16> bf16_kernels_;  // mixed precision: the same GPU, allocator and streams
  CudaStreams streams_;
  MpiGroups groups_;
  std::array<std::optional<NcclComm>, 7> nccl_;
  std::array<std::optional<NcclGroupComm>, 7> comms_;
  std::optional<NcclComm> embedding_nccl_;
  std::optional<NcclGroupComm> embedding_;
  std::optional<NcclP2p> p2p_;
  std::list<std::pair<CudaEvent, Buffer<std::byte>>> held_;
};

}  // namespace

std::unique_ptr<RankRuntime> cuda_runtime(const Program& p, const CudaSettings& settings) {
  return std::make_unique<CudaRuntime>(p, settings);
}

}  // namespace shardplan
