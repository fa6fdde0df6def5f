// A parallel group's collectives as a rank's layers and interpreter call them: the tensor- and
// context-parallel ones inside a layer's pass (TpComm, each call stamped so the interpreter can
// time it as its own action), and ZeRO's over one unit of a flat buffer, sharded evenly
// (zero_shards.h). MpiGroupComm (mpi_comm.h) and NcclGroupComm (cuda/nccl_comm.h) provide them;
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

// One tp or cp collective as it ran: its kind, group, and stamps at its start and end.
struct TimedCall {
  Collective op = Collective::all_reduce;
  Group group = Group::tp;
  Stamp start, end;
};

class GroupComm : public TpComm<float> {
 public:
  // ZeRO's collectives over a unit, on the selected stream, with `count` elements on every
  // member: `in` (size()·count elements) summed over the members, this rank's block of the sum
  // written to `part` (count elements)...
  virtual void reduce_scatter_blocks(const float* in, float* part, int64_t count) = 0;
  // ... and every member's block (count elements, this rank's at `part`, which may be its own
  // block of `out`) gathered into `out` (size()·count elements).
  virtual void all_gather_blocks(const float* part, float* out, int64_t count) = 0;

  // When set, every TpComm call (all_reduce, all_gather, reduce_scatter) is appended here.
  std::vector<TimedCall>* calls = nullptr;
};

}  // namespace shardplan
