// ZeRO's shards of a rank's flat buffer (param_layout) over its zero group, balanced per unit as
// core/zero_units.h describes: the buffer is cut into the units the program's ZeRO collectives
// name (FSDP's units under ZeRO-3, the gradient buckets under ZeRO-1/2), member i holds elements
// [i·p, (i+1)·p) of a unit of n elements, p = ceil(n / members), and a rank's shard is its piece
// of every unit, one after another, each stored in p elements (zeros past its end). A unit's
// reduce-scatter and all-gather then carry p elements on every member.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.h"
#include "executor/state/param_layout.h"

namespace shardplan {

struct ZeroShards {
  std::vector<ElementRange> units;  // in flat order, covering the whole buffer
  std::vector<int64_t> offsets;     // where each unit's piece starts in the shard, then its size
  int members = 1;
  int index = 0;  // this rank's position in the zero group

  // Elements of each member's piece of unit u, as stored.
  int64_t piece(size_t u) const { return (units[u].count() + members - 1) / members; }
  // The elements of unit u a member holds (fewer than piece(u) for the last ones when the unit
  // does not divide; none when it is shorter than the members).
  ElementRange piece_of(size_t u, int member) const;
  ElementRange mine(size_t u) const { return piece_of(u, index); }
  // The shard's elements: every piece, padded.
  int64_t padded() const { return offsets.back(); }
  // The units that make up `range` (a union of whole units).
  std::vector<size_t> units_in(ElementRange range) const;
};

// Units cut at `edges` (element offsets; any order, repeats allowed) of a buffer of `total`.
ZeroShards zero_shards(std::vector<int64_t> edges, int64_t total, int members, int index);

// The units of `p`'s ZeRO collectives over `zero_group` in `layout`: the flat buffer cut at every
// edge of a grad_reduce's bucket and a param_gather's units (action_ranges). With one member the
// program has none, and the shard is the whole buffer.
ZeroShards zero_shards(const Program& p, const ParamLayout& layout, Group zero_group, int members,
                       int index);

}  // namespace shardplan
