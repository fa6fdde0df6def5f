// One pre-norm transformer layer (Radford et al. 2019, §2.3: x + attn(norm(x)), then +
// mlp(norm(·))) on this rank's tensor-parallel share, forward and backward, with the activations it
// keeps for the backward pass chosen by the recompute mode. The tp collectives go through
// LayerContext::tp.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>

#include "core/layout.h"
#include "executor/layers/layer_context.h"
#include "executor/state/flat_view.h"

namespace shardplan {

// A layer's tensors in a flat buffer (P = const T* for parameters, T* for gradients). w_qkv is the
// rank's [q; k; v] rows as one matrix, w_fc1 its [gate; up] (swiglu) or fc1 rows; biases the model
// lacks, and ln biases under RMSNorm, are null.
template <class P>
struct BlockTensors {
  P ln1_weight = nullptr, ln1_bias = nullptr;
  P w_qkv = nullptr, b_qkv = nullptr;
  P w_o = nullptr, b_o = nullptr;
  P ln2_weight = nullptr, ln2_bias = nullptr;
  P w_fc1 = nullptr, b_fc1 = nullptr;
  P w_fc2 = nullptr, b_fc2 = nullptr;
};

// Layer `layer`'s tensors in `flat`: the whole buffer, or under ZeRO-3 the gathered layer.
template <class T>
BlockTensors<T*> block_tensors(const ParamLayout& layout, int layer, const FlatView<T>& flat) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  const auto at = [&](const std::string& name) -> T* {
    return layout.has(p + name) ? flat.at(layout.get(p + name)) : nullptr;
  };
  const auto first_of = [&](const char* a, const char* b) {
    return at(a) != nullptr ? at(a) : at(b);
  };
  BlockTensors<T*> t;
  t.ln1_weight = at("ln1.weight");
  t.ln1_bias = at("ln1.bias");
  t.w_qkv = at("attn.wq");
  t.b_qkv = at("attn.bq");
  t.w_o = at("attn.wo");
  t.b_o = at("attn.bo");
  t.ln2_weight = at("ln2.weight");
  t.ln2_bias = at("ln2.bias");
  t.w_fc1 = first_of("mlp.w_gate", "mlp.w_fc1");
  t.b_fc1 = first_of("mlp.b_gate", "mlp.b_fc1");
  t.w_fc2 = at("mlp.w_fc2");
  t.b_fc2 = at("mlp.b_fc2");
  assert(t.w_qkv != nullptr && t.w_o != nullptr && t.w_fc1 != nullptr && t.w_fc2 != nullptr);
  return t;
}

// Layer `layer`'s tensors in the whole flat buffer at `base`.
template <class T>
BlockTensors<T*> block_tensors(const ParamLayout& layout, int layer, T* base) {
  return block_tensors(layout, layer, FlatView<T>::whole(base, layout));
}

// What a layer keeps from forward to backward, charged as activations. Recompute::none keeps all
// of it; selective drops the attention probabilities and recomputes them from q and k in backward
// (Korthikanti et al. 2022, §5); full keeps only the input x and re-runs the layer's forward in
// backward (Chen et al. 2016), collectives included.
template <class T>
struct BlockSaved {
  Recompute mode = Recompute::none;
  Buffer<T> x;      // the layer's input [local_tokens, hidden]
  Buffer<T> h1;     // ln1's output [local_tokens, hidden]
  Buffer<T> qkv;    // [tokens, qkv_width]: this rank's tokens' (K and V re-gathered under cp)
  Buffer<T> probs;  // [batch, heads, seq, kv_seq]
  Buffer<T> ctx;    // attention output before the projection [tokens, heads·head_dim]
  Buffer<T> x1;     // the residual stream after attention [local_tokens, hidden]
  Buffer<T> h2;     // ln2's output
  Buffer<T> u;      // fc1 output [tokens, fc1_width]
  Buffer<T> a;      // activation output [tokens, ffn]

  int64_t bytes() const;
};

// Bytes BlockSaved holds after the forward pass under `mode`, for element type T of
// `bytes_per_element`.
int64_t block_saved_bytes(const LayerDims& d, Recompute mode, int64_t bytes_per_element);

// The collectives a layer calls on LayerContext::tp, in order (none when tp = 1; "SP:" only under
// sequence parallelism; AR|RS is an all-reduce, or a reduce-scatter under SP, of partial sums):
//   forward : [SP: all-gather ln1's output] qkv, attention, out-projection [AR|RS]
//             [SP: all-gather ln2's output] fc1, activation, fc2 [AR|RS]
//   backward: [SP: all-gather dy and ln2's output] fc2, activation, fc1 [AR|RS of d ln2-output]
//             ln2 [SP: all-gather d x1 and ln1's output] out-projection, attention, qkv
//             [AR|RS of d ln1-output] ln1
// Under SP a layer keeps its norm outputs sequence-sharded and its backward gathers them again,
// as Megatron-LM does (Korthikanti et al. 2022, §4.2.2), packed into the all-gather of the output
// gradient: the backward all-gathers carry twice the forward's bytes. Under context parallelism
// attention calls LayerContext::cp (context_parallel.h): forward an all-gather of K and V before
// attention; backward an all-gather of K and V again (the layer keeps only its own tokens'), then
// a reduce-scatter of dK and dV. Full recomputation first re-runs the forward, its collectives
// included.
//
// Takes the layer's input x[local_tokens, hidden] (kept in `saved`); returns its output
// (activations: the next layer's saved input).
template <class T>
Buffer<T> block_forward(const LayerDims& d, const BlockTensors<const T*>& w, Buffer<T> x,
                        Recompute mode, BlockSaved<T>& saved, LayerContext<T>& c);

// From dy[local_tokens, hidden]: accumulates the layer's parameter gradients into `grad` (its
// linear layers' weights' through c.weight_grads when set: a split backward's B, whose W runs
// them), consumes `saved`, returns dx[local_tokens, hidden] (buffers). Under sequence parallelism
// the gradients of the replicated tensors (norms, b_o, b_fc2) cover this rank's tokens only: the
// caller all-reduces them.
template <class T>
Buffer<T> block_backward(const LayerDims& d, const BlockTensors<const T*>& w,
                         const BlockTensors<T*>& grad, BlockSaved<T>&& saved, const T* dy,
                         LayerContext<T>& c);

}  // namespace shardplan
