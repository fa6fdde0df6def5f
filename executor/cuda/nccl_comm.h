// NCCL for the CUDA backend: a communicator per parallel group, created from the group's MPI
// communicator (its rank 0 makes the unique id and broadcasts it over MPI; NCCL documentation,
// "Creating a communicator with MPI"), and each group's collectives over it (GroupComm).
//
// One communicator may be used from several streams (a dp group's reductions on dp-comm and its
// ZeRO gathers on zero-comm). NCCL needs every member to run a communicator's calls in one order,
// so each call first waits for the communicator's previous one: on the GPU they run in the order
// they were issued, which the programs make the same on every member.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <vector>

#include "executor/cuda/cuda_context.h"
#include "executor/runtime/group_comm.h"

namespace shardplan {

class NcclComm {
 public:
  // Collective over `group` (MPI_COMM_NULL: no communicator, for ranks outside a group).
  explicit NcclComm(MPI_Comm group);
  // A communicator of `size` ranks from an id all of them hold (the pipeline links' two ranks).
  NcclComm(ncclUniqueId id, int size, int rank);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int size() const { return size_; }
  int rank() const { return rank_; }
  // Orders a call about to be issued on `stream` after every earlier call on this communicator.
  void before_call(cudaStream_t stream);
  // Marks the call just issued on `stream` as the one the next call waits for.
  void after_call(cudaStream_t stream);

 private:
  ncclComm_t comm_ = nullptr;
  int size_ = 1, rank_ = 0;
  CudaEvent last_;
  bool called_ = false;
};

// A group's collectives over NCCL, on device memory, in fp32 (ncclFloat32) or bf16 (ncclBfloat16,
// which NCCL sums in fp32 and rounds at each step of its algorithm). ZeRO's unit collectives run on
// the selected stream; the layers' (a tp or cp collective, in the middle of its compute) on `own`
// stream, which first waits for the selected stream, and the selected stream then waits for them;
// they are stamped for the action timings.
class NcclGroupComm final : public GroupComm {
 public:
  NcclGroupComm(NcclComm& comm, Group group, Stream own, CudaContext& ctx, StepStreams& streams);
  int size() const override { return comm_.size(); }
  int rank() const override { return comm_.rank(); }
  void all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) override;
  void all_gather(const void* part, void* full, int64_t count, Dtype type) override;
  void reduce_scatter(const void* full, void* part, int64_t count, Dtype type) override;
  // ncclReduceScatter / ncclAllGather (in place when `part` is this rank's block of `out`).
  void reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) override;
  void all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) override;

 private:
  template <class Issue>
  void on_own_stream(Collective op, int64_t bytes, Issue&& issue);
  template <class Issue>
  void on_selected_stream(Issue&& issue);
  // on_selected_stream, stamped into `calls` as a collective of `bytes` where that is set (ZeRO's).
  template <class Issue>
  void on_selected_stream_recorded(Collective op, int64_t bytes, Issue&& issue);

  NcclComm& comm_;
  Group group_;
  Stream own_;
  CudaContext& ctx_;
  StepStreams& streams_;
};

}  // namespace shardplan
