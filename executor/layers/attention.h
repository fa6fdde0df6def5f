// Causal multi-head attention over this rank's heads (heads / tp of them: the column-parallel split
// of Shoeybi et al. 2019, §3), with grouped key/value heads (Ainslie et al. 2023). Queries are the
// q column blocks of one qkv activation [tokens, qkv_width] ([q heads | k heads | v heads]); keys
// and values are that activation's own k and v blocks, or under context parallelism the whole
// sequence's, all-gathered over the cp group (context_parallel.h), with the causal mask applied by
// position in the whole sequence.
#pragma once

#include <cstdint>

#include "executor/kernels.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// Where attention reads keys and values (P = const T*) or writes their gradients (P = T*): kv_seq
// rows per sequence, `stride` elements apart, kv-head g's key at column k + g·head_dim and its
// value at v + g·head_dim.
template <class P>
struct KeyValues {
  P rows = nullptr;
  int64_t stride = 0, k = 0, v = 0;
};

// The k and v column blocks of a qkv activation [tokens, qkv_width] (every key of the sequence when
// cp = 1).
template <class P>
KeyValues<P> qkv_key_values(const LayerDims& d, P qkv) {
  return {qkv, d.qkv_width(), d.heads * d.head_dim, (d.heads + d.kv_heads) * d.head_dim};
}

// Elements of the attention probabilities: batch · heads · seq · kv_seq (Korthikanti et al. 2022's
// as²b, the part selective recomputation drops; s/cp query rows against s keys under cp).
inline int64_t attention_probs_count(const LayerDims& d) {
  return d.batch * d.heads * d.seq * d.kv_seq();
}

// The heads are computed on `dev` in batches of GEMMs over the kv groups (attention_heads_per_call
// of them a call): for each sequence and each position j within a group, heads j, G + j, 2G + j,
// ... (G query heads per kv head) read different keys and write different key gradients, so one
// strided batch covers them.
//
// probs[b, h, i, j] = softmax over keys j ≤ position(i) of q_i·k_j/√head_dim (Vaswani et al. 2017,
// eq. 1), 0 for the later keys; and, unless ctx is null, ctx[tokens, heads·head_dim]: each head's
// probs·v, heads side by side, made right after the head's probabilities while a CPU core's cache
// still holds them. Selective recomputation's re-forward passes a null ctx: it kept the context.
template <class T>
void attention_forward(Kernels<T>& dev, const LayerDims& d, const T* qkv, KeyValues<const T*> kv,
                       T* probs, T* ctx, MatmulStats* stats);

// Elements of attention_backward's scratch: the score gradients of the heads one call takes.
template <class T>
int64_t attention_scratch_count(const Kernels<T>& dev, const LayerDims& d) {
  return dev.attention_heads_per_call(d.kv_heads) * d.seq * d.kv_seq();
}

// From dctx, using the saved or recomputed probs: dq into dqkv's q columns and dk, dv into dkv
// (both overwritten; dkv may be dqkv's own k and v columns). `scratch` holds
// attention_scratch_count elements.
template <class T>
void attention_backward(Kernels<T>& dev, const LayerDims& d, const T* qkv, KeyValues<const T*> kv,
                        const T* probs, const T* dctx, T* dqkv, KeyValues<T*> dkv, T* scratch,
                        MatmulStats* stats);

}  // namespace shardplan
