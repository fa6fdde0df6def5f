// ZeRO's collectives over one unit of a rank's flat buffer (zero_shards.h) of T (float, or bf16
// under mixed precision), through the rank's runtime on the selected stream: every member sends and
// receives the unit's piece, p elements, so the calls are the equal-count ones (GroupComm's
// *_blocks), as FSDP's and Megatron-LM's are. A full buffer holding only the unit's n elements
// (ZeRO-1/2's flat buffers, where the next unit follows) is staged through a padded one when n is
// not members·p; ZeRO-3's unit buffers are allocated padded and need none.
#pragma once

#include <cstdint>
#include <span>

#include "executor/runtime/group_comm.h"
#include "executor/runtime/rank_runtime.h"
#include "executor/state/zero_shards.h"

namespace shardplan {

// Unit u of `full` (its n elements, or members·p with zeros past n) summed over `comm`; this
// rank's block of the sum (p elements, zeros past its piece) written to `part`.
template <class T>
void reduce_scatter_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                         std::span<const T> full, T* part);

// Unit u gathered into `full` (its n elements, or members·p) from every member's piece; this
// rank's at `part`: p elements when `full` holds members·p, else its piece's (mine(u)).
template <class T>
void all_gather_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u, const T* part,
                     std::span<T> full);

// reduce_scatter_unit's block added into `shard` (the rank's padded shard, at unit u's offset):
// ZeRO-2's bucket and ZeRO-3's unit gradients, which accumulate over micro-batches there.
template <class T>
void reduce_scatter_add(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                        std::span<const T> full, T* shard);

}  // namespace shardplan
