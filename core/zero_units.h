// The units ZeRO reduces, gathers and shards a rank's dense parameters by: Megatron-LM's gradient
// buckets under ZeRO-1/2, FSDP's units under ZeRO-3 (the embedding, each layer, the head). Each
// unit is sharded evenly over the data-parallel ranks, padded: member i holds elements
// [i·p, (i+1)·p) of a unit of n, p = ceil(n / members) — FSDP shards each FlatParameter so (Zhao et
// al. 2023 §3; torch.distributed.fsdp's FlatParamHandle pads it to a multiple of the world size)
// and Megatron-LM's distributed optimizer each bucket (megatron/core/distributed/
// param_and_grad_buffer.py pads a bucket to a multiple of dp and gives each rank 1/dp of it). So a
// unit's reduce-scatter and all-gather carry p elements on every member. The schedule makes its
// buckets here, the memory model sizes the shards here, and the executor finds the same units in
// the program's actions (executor/state/zero_shards.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan {

// Consecutive units [first, last] of a chunk (indices in forward order) and their parameters.
struct UnitSpan {
  int first = 0, last = 0;
  int64_t params = 0;
  bool operator==(const UnitSpan&) const = default;
};

// Buckets over units holding `params` parameters each (forward order): filled in backward order
// and closed once they hold `threshold` (Megatron-LM's DDP fills its buckets in reverse parameter
// order); units without parameters belong to none. In backward order. A threshold of 1 makes each
// unit with parameters its own (ZeRO-3).
std::vector<UnitSpan> gradient_buckets(std::span<const int64_t> params, int64_t threshold);

// The dense parameters (after tensor parallelism) of each ZeRO unit of pipeline rank `stage`: its
// chunks' buckets under ZeRO-1/2, its units under ZeRO-3, where with tied embeddings and pp = 1
// the word embedding is a unit apart from the positions: the head gathers it alone.
std::vector<int64_t> zero_unit_params(const Model& m, const Training& t, const Layout& l,
                                      int stage);

// Elements of one rank's shard of those units over `members` ranks: ceil(n / members) of each.
int64_t zero_shard_params(std::span<const int64_t> units, int64_t members);

}  // namespace shardplan
