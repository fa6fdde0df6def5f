// What the executor moves checked against its program, the only truth for communication: the
// tensor- and context-parallel collectives the layers call in a unit's pass must be that pass's
// collective actions, one for one, in order, of the same op, group and bytes; a pipeline message
// must be its action's bytes, and so must the calls of a gradient reduction or a ZeRO gather
// together (under ZeRO each unit's padded pieces: core/zero_units.h). A disagreement is a bug in the layers or the schedule (the simulator
// would price one thing and the executor run another), thrown as std::logic_error naming the
// action and both byte counts rather than timed as nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/schedule.h"
#include "executor/runtime/group_comm.h"

namespace shardplan {

// The layers' calls of the unit pass over actions [first, last) of `p`, in the order they ran.
void check_pass_calls(const Program& p, size_t first, size_t last,
                      std::span<const TimedCall> calls);

// A send's or recv's message of `bytes` for action `index` of `p`.
void check_message(const Program& p, size_t index, int64_t bytes);

// The calls a grad_reduce or param_gather (action `index` of `p`) made on its group, in order:
// each of the action's op, their bytes summed the action's.
void check_moved(const Program& p, size_t index, std::span<const TimedCall> calls);

}  // namespace shardplan
