// The CPU backend's RankRuntime (rank_runtime.h): host memory, CpuKernels, one MPI communicator
// per group, MPI point-to-point, one thread in program order.
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "executor/cpu_kernels.h"
#include "executor/runtime/mpi_comm.h"
#include "executor/runtime/rank_runtime.h"

namespace shardplan {

namespace {

class MpiRuntime final : public RankRuntime {
 public:
  explicit MpiRuntime(const Program& p) : groups_(p), alloc_("rank " + std::to_string(p.rank)) {
    for (const auto& [g, name] : kGroupNames)
      comms_[static_cast<size_t>(g)].emplace(groups_.get(g), g, std::string(name), streams_);
    if (groups_.embedding() != MPI_COMM_NULL)
      embedding_.emplace(groups_.embedding(), Group::pp, "embedding", streams_);
  }

  Kernels<float>& f32_kernels() override { return cpu_kernels<float>(); }
  Kernels<bf16>& bf16_kernels() override { return cpu_kernels<bf16>(); }
  TensorAllocator& allocator() override { return alloc_; }
  StepStreams& streams() override { return streams_; }
  GroupComm& group(Group g) override { return *comms_[static_cast<size_t>(g)]; }
  GroupComm* embedding_group() override { return embedding_ ? &*embedding_ : nullptr; }
  PipelineP2p& p2p() override { return p2p_; }
  void release_bytes_after_use(Buffer<std::byte>) override {}  // the work is done: freed now
  void finish_releases(bool) override {}

 private:
  MpiGroups groups_;
  HostStreams streams_;
  TensorAllocator alloc_;
  std::array<std::optional<MpiGroupComm>, 7> comms_;
  std::optional<MpiGroupComm> embedding_;
  MpiP2p p2p_;  // after alloc_: its pending messages are freed first
};

}  // namespace

std::unique_ptr<RankRuntime> mpi_runtime(const Program& p) {
  return std::make_unique<MpiRuntime>(p);
}

}  // namespace shardplan
