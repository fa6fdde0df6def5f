// The GEMMs a model's layer and LM head make, recorded from the layers' own calls
// (executor/layers/gemm_call.h) rather than listed by hand: one layer's forward and backward pass
// and the head's are run on a tp rank's share of the real shape, on kernels that compute nothing
// and memory that holds nothing, with MatmulStats::calls set. What calibration times is then what
// the executor runs, by construction.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/layers/gemm_call.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// In the order the layers make them, one entry per GEMM (as the CPU backend runs attention: one
// head a call), each `what` as its site names it ("fc1 wgrad").
struct LayerGemms {
  std::vector<GemmCall> layer;  // one layer's forward then backward (no recomputation)
  std::vector<GemmCall> head;   // the LM head's forward then backward, over `vocab_rows` rows
};

// The GEMMs of the rank share `d` of a layer (d.cp = 1) and of the head over `vocab_rows` rows of
// the vocabulary.
LayerGemms record_layer_gemms(const LayerDims& d, int64_t vocab_rows);

}  // namespace shardplan
