// A rank's flat buffer (param_layout of its RankShard) to and from the single-rank flat layout
// (param_layout of whole_model), over MPI_COMM_WORLD: how the interpreter gathers the full model
// and a checkpoint's state, and how any layout takes its part of them back.
#pragma once

#include <vector>

#include "core/model.h"
#include "core/placement.h"
#include "executor/state/param_layout.h"

namespace shardplan {

// The whole model's flat buffer on world rank 0 (empty elsewhere) from every rank's `flat`
// (layout.total elements, laid out by `layout`): the ranks at dp and cp coordinate 0 contribute
// their tensors (a replicated one from tp rank 0 only, a tied LM-head copy not at all), so each
// element is summed from exactly one rank. Collective.
std::vector<float> to_whole_layout(const Model& m, const ParamLayout& layout, const RankCoord& c,
                                   const std::vector<float>& flat);

// The inverse: `whole` (read on world rank 0 only) broadcast, and this rank's tensors taken from it
// into `flat` (layout.total elements); a tied LM-head copy takes the embedding's values.
// Collective.
void from_whole_layout(const Model& m, const ParamLayout& layout, const std::vector<float>& whole,
                       float* flat);

}  // namespace shardplan
