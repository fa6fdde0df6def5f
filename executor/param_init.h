// Deterministic initial parameters: each element's value depends only on the seed, the tensor's
// name and the element's index in the full tensor, so every layout starts from the same model.
#pragma once

#include <cstdint>
#include <span>

#include "core/model.h"
#include "executor/param_layout.h"

namespace shardplan {

// Fills `params` (layout.total elements) as each tensor's ParamInit says.
template <class T>
void init_parameters(const Model& m, const ParamLayout& layout, uint64_t seed, std::span<T> params);

}  // namespace shardplan
