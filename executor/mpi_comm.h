// MPI for the executor: one communicator per parallel group of a rank (split from MPI_COMM_WORLD by
// the placement), the tensor- and context-parallel collectives the layers call (TpComm over MPI,
// each call timed), and the flat-buffer collectives of data parallelism and ZeRO over uneven
// shards.
#pragma once

#include <mpi.h>

#include <array>
#include <span>
#include <vector>

#include "core/collective.h"
#include "core/schedule.h"
#include "executor/param_layout.h"
#include "executor/tp_comm.h"

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

// One tp or cp collective as it ran: its kind, group and MPI_Wtime() at start and end.
struct TimedCall {
  Collective op = Collective::all_reduce;
  Group group = Group::tp;
  double start_s = 0;
  double end_s = 0;
};

// TpComm over the communicator of a group (tp, or cp for context parallelism's K, V exchange);
// every call is appended to `calls` (when set).
class MpiTpComm final : public TpComm<float> {
 public:
  MpiTpComm(MPI_Comm comm, Group group);
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  void all_reduce(std::span<float> x, ReduceOp op) override;
  void all_gather(std::span<const float> part, std::span<float> full) override;
  void reduce_scatter(std::span<const float> full, std::span<float> part) override;

  std::vector<TimedCall>* calls = nullptr;

 private:
  MPI_Comm comm_;
  Group group_;
  int size_ = 1;
  int rank_ = 0;
};

// How a flat buffer of `total` elements is sharded over `members` ranks (ZeRO: split_range, each
// shard stored in ceil(total / members) elements, as DeepSpeed and FSDP pad theirs).
struct FlatShards {
  int64_t total = 0;
  int members = 1;
  int index = 0;  // this rank's shard

  ElementRange mine() const { return split_range(total, members, index); }
  int64_t padded() const { return (total + members - 1) / members; }
  // Elements of `range` in each member's shard (they follow one another in member order).
  std::vector<int> counts_in(ElementRange range) const;
};

// part (count elements) = this rank's block of the element-wise sum of every rank's n·count
// elements of `full`. MPI_Reduce_scatter with n equal counts rather than MPI_Reduce_scatter_block:
// Open MPI 4.1's _block ran 2.5 to 3.5 times slower at 2 to 8 MB on 2 ranks here (measured,
// 2026-11-23: 4.19 ms against 1.27 ms at 3.16 MB).
void reduce_scatter_equal(MPI_Comm comm, const float* full, float* part, int64_t count, int n);

// Element-wise sum over `comm`, in place.
void all_reduce_sum(MPI_Comm comm, std::span<float> x);

// `in` (range.count() elements: the flat buffer's `range`) summed over the members; this rank's
// part of the sum (range ∩ its shard, counts_in(range)[index] elements) written to `part`.
void reduce_scatter_range(MPI_Comm comm, const FlatShards& s, ElementRange range, const float* in,
                          float* part);

// Every member's part of `range` (range ∩ its shard, this rank's at `part`) gathered into `out`
// (range.count() elements). `part` may point into `out` itself.
void all_gather_range(MPI_Comm comm, const FlatShards& s, ElementRange range, const float* part,
                      float* out);

}  // namespace shardplan
