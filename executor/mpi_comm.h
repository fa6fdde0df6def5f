// MPI for the CPU backend: one communicator per parallel group of a rank (split from
// MPI_COMM_WORLD by the placement), each group's collectives over it (GroupComm: the tp and cp
// collectives the layers call, stamped; ZeRO's over a unit's equal blocks), and the pipeline's
// sends and receives.
#pragma once

#include <mpi.h>

#include <array>
#include <span>
#include <utility>
#include <vector>

#include "core/schedule.h"
#include "executor/group_comm.h"
#include "executor/pipeline_p2p.h"

namespace shardplan {

// Communicators of every group of `p`'s rank, group rank = position in p.groups[g], plus the tied
// embedding's group (first and last pipeline stage; MPI_COMM_NULL elsewhere). Construction is
// collective over MPI_COMM_WORLD: every rank builds its own program's set at the same time.
class MpiGroups {
 public:
  explicit MpiGroups(const Program& p);
  ~MpiGroups();
  MpiGroups(const MpiGroups&) = delete;
  MpiGroups& operator=(const MpiGroups&) = delete;

  MPI_Comm get(Group g) const { return comms_[static_cast<size_t>(g)]; }
  MPI_Comm embedding() const { return embedding_; }

 private:
  std::array<MPI_Comm, 7> comms_{};
  MPI_Comm embedding_ = MPI_COMM_NULL;
};

// A group's collectives over its communicator, on host memory; TpComm calls are stamped on
// `streams`.
class MpiGroupComm final : public GroupComm {
 public:
  MpiGroupComm(MPI_Comm comm, Group group, StepStreams& streams);
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(std::span<float> x, ReduceOp op) override;
  void all_gather(std::span<const float> part, std::span<float> full) override;
  void reduce_scatter(std::span<const float> full, std::span<float> part) override;
  void reduce_scatter_blocks(const float* in, float* part, int64_t count) override;
  void all_gather_blocks(const float* part, float* out, int64_t count) override;

 private:
  template <class Call>
  void timed(Collective op, Call&& call);

  MPI_Comm comm_;
  Group group_;
  StepStreams& streams_;
  int size_ = 1;
  int rank_ = 0;
};

// part (count elements) = this rank's block of the element-wise sum of every rank's n·count
// elements of `full`. MPI_Reduce_scatter with n equal counts rather than MPI_Reduce_scatter_block:
// Open MPI 4.1's _block ran 2.5 to 3.5 times slower at 2 to 8 MB on 2 ranks here (measured,
// 2026-11-23: 4.19 ms against 1.27 ms at 3.16 MB).
void reduce_scatter_equal(MPI_Comm comm, const float* full, float* part, int64_t count, int n);

// Sends are MPI_Isend (non-blocking, as Megatron-LM's p2p ops), receives MPI_Recv (blocking), on
// MPI_COMM_WORLD, matched by tag.
class MpiP2p final : public PipelineP2p {
 public:
  ~MpiP2p() override { finish_sends(true); }
  void send(Buffer<float> message, int64_t peer, int64_t tag, Pass pass) override;
  void recv(float* into, int64_t count, int64_t peer, int64_t tag, Pass pass) override;
  void finish_sends(bool wait) override;

 private:
  std::vector<std::pair<MPI_Request, Buffer<float>>> sends_;
};

}  // namespace shardplan
