// Deterministic initial parameters: each element's value depends only on the seed, the tensor's
// name and the element's index in the full tensor, so every layout starts from the same model.
#pragma once

#include <cstdint>
#include <span>

#include "core/model.h"
#include "executor/state/param_layout.h"

namespace shardplan {

// Fills `params` (layout.total elements) as each tensor's ParamInit says.
template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed, std::span<T> params);

// Elements `range` of the flat buffer into `part` (range.count() elements): a ZeRO-3 rank
// initialises its shard alone, as FSDP materialises each rank's shard, with the values the whole
// buffer would hold.
template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed, ElementRange range,
                     std::span<T> part);

}  // namespace shardplan
