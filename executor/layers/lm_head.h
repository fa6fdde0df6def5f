// The last stage's output layer: final norm, logits against this rank's vocabulary rows (the LM
// head, or the token embedding when tied), and the vocabulary-parallel cross-entropy of the tokens
// in compute_t<T>: under bf16 the logits are cast to fp32 first and their gradient back after, as
// Megatron-LM computes the loss on logits.float() (the cost model's transient compute-dtype logits
// beside the fp32 softmax it keeps: simulator/activation_memory.h).
#pragma once

#include <cstdint>

#include "executor/layers/layer_context.h"
#include "executor/state/flat_view.h"

namespace shardplan {

// The head's tensors in a flat buffer (P = const T* for parameters, T* for gradients).
template <class P>
struct HeadTensors {
  P norm_weight = nullptr;
  P norm_bias = nullptr;     // null under RMSNorm
  P vocab_weight = nullptr;  // [local vocab rows, hidden]: lm_head, or wte when tied on this rank
};

// The head's tensors in `flat`: the whole buffer, or under ZeRO-3 the gathered head (with the
// word embedding it borrows when the embeddings are tied and pp = 1).
template <class T>
HeadTensors<T*> head_tensors(const ParamLayout& layout, const FlatView<T>& flat) {
  const auto at = [&](const char* name) { return flat.at(layout.get(name)); };
  HeadTensors<T*> h;
  h.norm_weight = at("final_norm.weight");
  if (layout.has("final_norm.bias")) h.norm_bias = at("final_norm.bias");
  h.vocab_weight = at(layout.has("lm_head") ? "lm_head" : "wte");
  return h;
}
// The head's tensors in the whole flat buffer at `base`.
template <class T>
HeadTensors<T*> head_tensors(const ParamLayout& layout, T* base) {
  return head_tensors(layout, FlatView<T>::whole(base, layout));
}
// The vocabulary rows this rank's head covers.
ElementRange head_vocab(const ParamLayout& layout);

// What the backward pass needs, charged as activations.
template <class T>
struct HeadSaved {
  Buffer<T> x, h;                   // the final norm's input and output (this rank's tokens)
  Buffer<compute_t<T>> exp_logits;  // [tokens, local vocab]: exp(logit − row max)
  Buffer<compute_t<T>> sum_exp;     // [tokens]: all-reduced Σ exp(logit − row max)
};

// Collectives on LayerContext::tp when tp > 1: forward [SP: all-gather the norm's output], then
// all-reduce max of [tokens] row maxima and all-reduce sum of [2·tokens] (Σexp and target logits;
// both in compute_t<T>, on LayerContext::compute_tp);
// backward: all-reduce (SP: reduce-scatter) of the norm output's gradient partial sums.
//
// Takes the last layer's output x[local_tokens, hidden]; targets holds every token's target.
// Returns the sum of the micro-batch's token losses (the same on every tp rank).
template <class T>
double head_forward(const LayerDims& d, const HeadTensors<const T*>& w, ElementRange vocab,
                    Buffer<T> x, const int32_t* targets, HeadSaved<T>& saved, LayerContext<T>& c);

// Gradients of loss_scale·(sum of token losses): accumulates into `grad`, consumes `saved`, returns
// d x[local_tokens, hidden] (buffers).
template <class T>
Buffer<T> head_backward(const LayerDims& d, const HeadTensors<const T*>& w,
                        const HeadTensors<T*>& grad, ElementRange vocab, const int32_t* targets,
                        HeadSaved<T>&& saved, compute_t<T> loss_scale, LayerContext<T>& c);

}  // namespace shardplan
