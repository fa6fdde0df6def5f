// The GEMMs a model's layer and LM head make, recorded from the layers' own calls
// (executor/layers/gemm_call.h) rather than listed by hand: one layer's forward and backward pass
// and the head's are run on a tp rank's share of the real shape, on kernels that compute nothing
// and memory that holds nothing, with MatmulStats::calls set. What calibration times is then what
// the executor runs, by construction.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "executor/layers/gemm_call.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// How many of `kv_heads` attention head groups a device's batched GEMM takes
// (Kernels::attention_heads_per_call): one on a CPU core, all of them on a GPU.
using HeadsPerCall = std::function<int64_t(int64_t kv_heads)>;

template <class T>
HeadsPerCall heads_per_call_of(const Kernels<T>& dev) {
  return [&dev](int64_t kv_heads) { return dev.attention_heads_per_call(kv_heads); };
}

// In the order the layers make them, one entry per GEMM (a batched call's GEMMs each, with its
// batch), each `what` as its site names it ("fc1 wgrad").
struct LayerGemms {
  std::vector<GemmCall> layer;  // one layer's forward then backward (no recomputation)
  std::vector<GemmCall> head;   // the LM head's forward then backward, over `vocab_rows` rows
};

// The GEMMs of the rank share `d` of a layer (d.cp = 1) and of the head over `vocab_rows` rows of
// the vocabulary, attention batched as `heads_per_call` says the device batches it.
LayerGemms record_layer_gemms(const LayerDims& d, int64_t vocab_rows,
                              const HeadsPerCall& heads_per_call);

}  // namespace shardplan
