// Causal multi-head attention over this rank's heads (heads / tp of them: the column-parallel split
// of Shoeybi et al. 2019, §3), with grouped key/value heads (Ainslie et al. 2023). q, k and v are
// the column blocks [q heads | k heads | v heads] of one qkv activation [tokens, qkv_width].
#pragma once

#include <cstdint>

#include "executor/layer_context.h"

namespace shardplan {

// Elements of the attention probabilities: batch · heads · seq · seq (Korthikanti et al. 2022's
// as²b, the part selective recomputation drops).
inline int64_t attention_probs_count(const LayerDims& d) {
  return d.batch * d.heads * d.seq * d.seq;
}

// probs[b, h, i, j] = softmax over j ≤ i of q_i·k_j/√head_dim (Vaswani et al. 2017, eq. 1), 0 for j
// > i.
template <class T>
void attention_probs(const LayerDims& d, const T* qkv, T* probs, MatmulStats* stats);

// ctx[tokens, heads·head_dim]: each head's probs·v, heads side by side.
template <class T>
void attention_context(const LayerDims& d, const T* qkv, const T* probs, T* ctx,
                       MatmulStats* stats);

// dqkv (overwritten) from dctx, using the saved or recomputed probs; `scratch` holds seq·seq
// elements.
template <class T>
void attention_backward(const LayerDims& d, const T* qkv, const T* probs, const T* dctx, T* dqkv,
                        T* scratch, MatmulStats* stats);

}  // namespace shardplan
