// MPI for the CPU backend: one communicator per parallel group of a rank (split from
// MPI_COMM_WORLD by the placement), each group's collectives over it (GroupComm: the tp and cp
// collectives the layers call, stamped; ZeRO's over a unit's equal blocks), and the pipeline's
// sends and receives.
#pragma once

#include <mpi.h>

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/schedule.h"
#include "executor/runtime/group_comm.h"
#include "executor/runtime/pipeline_p2p.h"

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

// A group's collectives over its communicator, on host memory; the layers' calls are stamped on
// `streams`.
class MpiGroupComm final : public GroupComm {
 public:
  // `label` names the group in the watchdog's reports ("tp", "embedding").
  MpiGroupComm(MPI_Comm comm, Group group, std::string label, StepStreams& streams);
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) override;
  void all_gather(const void* part, void* full, int64_t count, Dtype type) override;
  void reduce_scatter(const void* full, void* part, int64_t count, Dtype type) override;
  void reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) override;
  void all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) override;

 private:
  // Runs `call`, stamped into `calls` as a collective of `bytes` where that is set.
  template <class Call>
  void timed(Collective op, int64_t bytes, Call&& call);
  // all_gather_blocks untimed: the layers' all_gather runs it timed as its own call.
  void gather_blocks(const void* part, void* out, int64_t count, Dtype type);

  MPI_Comm comm_;
  Group group_;
  std::string label_;
  std::vector<int> members_;  // world ranks, in group order
  int64_t calls_made_ = 0;    // collectives so far, for the watchdog's WaitSite
  StepStreams& streams_;
  int size_ = 1;
  int rank_ = 0;
};

// The MPI datatype of `type`'s elements: MPI_FLOAT, or for bf16, which MPI lacks, a pair of bytes
// whose sum and max are user operations adding in fp32 and rounding once (mpi_comm.cpp). Throws
// std::logic_error for a dtype the executor does not move.
MPI_Datatype mpi_datatype(Dtype type);
MPI_Op mpi_op(Dtype type, ReduceOp op);

// part (count elements) = this rank's block of the element-wise sum of every rank's n·count
// elements of `full`. MPI_Reduce_scatter with n equal counts rather than MPI_Reduce_scatter_block:
// Open MPI 4.1's _block ran 2.5 to 3.5 times slower at 2 to 8 MB on 2 ranks here (measured,
// 2026-11-23: 4.19 ms against 1.27 ms at 3.16 MB).
void reduce_scatter_equal(MPI_Comm comm, const void* full, void* part, int64_t count, int n,
                          Dtype type = Dtype::fp32);

// Sends are MPI_Isend (non-blocking, as Megatron-LM's p2p ops), receives MPI_Recv (blocking), on
// MPI_COMM_WORLD, matched by tag.
class MpiP2p final : public PipelineP2p {
 public:
  ~MpiP2p() override { finish_sends(true); }
  void send(Buffer<std::byte> message, int64_t peer, int64_t tag, Pass pass) override;
  void recv(void* into, int64_t bytes, int64_t peer, int64_t tag, Pass pass) override;
  void finish_sends(bool wait) override;

 private:
  struct Send {
    MPI_Request request;
    Buffer<std::byte> message;
    int peer;
  };
  std::vector<Send> sends_;
};

}  // namespace shardplan
