// A parallel group's collectives as a rank's layers and interpreter call them: the tensor- and
// context-parallel ones inside a layer's pass (TpComm, each call stamped so the interpreter can
// time it as its own action), and data parallelism's and ZeRO's over ranges of a flat buffer
// sharded unevenly. MpiGroupComm (mpi_comm.h) and NcclGroupComm (cuda/nccl_comm.h) provide them;
// both run on the stream the rank's StepStreams selected (the layers' collectives on their own
// tp-comm or cp-comm stream).
#pragma once

#include <cstdint>
#include <vector>

#include "core/collective.h"
#include "core/placement.h"
#include "executor/param_layout.h"
#include "executor/step_streams.h"
#include "executor/tp_comm.h"

namespace shardplan {

// How a flat buffer of `total` elements is sharded over `members` ranks (ZeRO: split_range, each
// shard stored in ceil(total / members) elements, as DeepSpeed and FSDP pad theirs).
struct FlatShards {
  int64_t total = 0;
  int members = 1;
  int index = 0;  // this rank's shard

  ElementRange mine() const { return split_range(total, members, index); }
  int64_t padded() const { return (total + members - 1) / members; }
  // Elements of `range` in each member's shard (they follow one another in member order).
  std::vector<int64_t> counts_in(ElementRange range) const;
};

// One tp or cp collective as it ran: its kind, group, and stamps at its start and end.
struct TimedCall {
  Collective op = Collective::all_reduce;
  Group group = Group::tp;
  Stamp start, end;
};

class GroupComm : public TpComm<float> {
 public:
  // `in` (range.count() elements: the flat buffer's `range`) summed over the members; this rank's
  // part of the sum (range ∩ its shard, counts_in(range)[index] elements) written to `part`.
  virtual void reduce_scatter_range(const FlatShards& s, ElementRange range, const float* in,
                                    float* part) = 0;
  // Every member's part of `range` (range ∩ its shard, this rank's at `part`) gathered into `out`
  // (range.count() elements). `part` may point into `out` itself.
  virtual void all_gather_range(const FlatShards& s, ElementRange range, const float* part,
                                float* out) = 0;

  // When set, every TpComm call (all_reduce, all_gather, reduce_scatter) is appended here.
  std::vector<TimedCall>* calls = nullptr;
};

}  // namespace shardplan
