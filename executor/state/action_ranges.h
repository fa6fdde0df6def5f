// The flat-buffer ranges (param_layout) of the units an action names: what a grad_reduce reduces
// and a param_gather gathers — the embedding (wte, wpe), layers, and the head (final norm and an
// untied or copied lm_head), adjacent ones merged.
#pragma once

#include <vector>

#include "core/schedule.h"
#include "executor/state/param_layout.h"

namespace shardplan {

// The embedding's tensors (wte, wpe) and the head's (final norm, and an untied or copied lm_head);
// empty where the rank holds none.
ElementRange embedding_range(const ParamLayout& layout);
ElementRange head_range(const ParamLayout& layout);

// A grad_reduce's bucket or a param_gather's units. A ZeRO-3 head gather with the embedding bit
// (tied embeddings, pp = 1) covers the head and the word embedding it borrows (wte, not wpe).
std::vector<ElementRange> action_ranges(const ParamLayout& layout, const Action& a);

}  // namespace shardplan
