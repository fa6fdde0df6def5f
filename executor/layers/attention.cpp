#include "executor/layers/attention.h"

#include <algorithm>
#include <cmath>

namespace shardplan {

namespace {

// One batched call's heads: heads first·G + j, (first + 1)·G + j, ... (`count` of them), G query
// heads per kv head; kv groups first .. first + count − 1.
struct HeadBatch {
  int64_t b = 0;  // the sequence
  int64_t j = 0;  // position within the kv group
  int64_t first = 0, count = 1;
};

// Every batch of heads of the micro-batch, sequence after sequence, in the order the CPU backend
// (one head a call) meets the heads: for G = 1 that is head after head.
template <class T, class F>
void for_each_head_batch(const Kernels<T>& dev, const LayerDims& d, F&& f) {
  const int64_t G = d.heads / d.kv_heads, per_call = dev.attention_heads_per_call(d.kv_heads);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t j = 0; j < G; ++j)
      for (int64_t g = 0; g < d.kv_heads; g += per_call)
        f(HeadBatch{b, j, g, std::min(per_call, d.kv_heads - g)});
}

// Where a batch's first head's operands start (its heads are G·D columns apart in a query row, D
// in a key row, G·S·K elements apart in probs).
struct HeadOperands {
  int64_t q = 0;         // its q columns within a query row
  int64_t k = 0, v = 0;  // its kv group's k and v columns within a key row
  int64_t probs = 0;     // its score block within probs
};
template <class P>
HeadOperands head_operands(const LayerDims& d, const KeyValues<P>& kv, const HeadBatch& hb) {
  const int64_t G = d.heads / d.kv_heads, D = d.head_dim;
  const int64_t head = hb.first * G + hb.j;
  return {head * D, kv.k + hb.first * D, kv.v + hb.first * D,
          (hb.b * d.heads + head) * d.seq * d.kv_seq()};
}

// Sequence b's first key row.
template <class P>
P key_rows(const LayerDims& d, const KeyValues<P>& kv, int64_t b) {
  return kv.rows + b * d.kv_seq() * kv.stride;
}

template <class T>
T softmax_scale(const LayerDims& d) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
}

}  // namespace

template <class T>
void attention_forward(Kernels<T>& dev, const LayerDims& d, const T* qkv, KeyValues<const T*> kv,
                       T* probs, T* ctx, MatmulStats* stats) {
  const int64_t S = d.seq, K = d.kv_seq(), W = d.qkv_width(), D = d.head_dim,
                C = d.heads * d.head_dim;
  const int64_t G = d.heads / d.kv_heads;
  const compute_t<T> scale = softmax_scale<compute_t<T>>(d);
  for_each_head_batch(dev, d, [&](const HeadBatch& hb) {
    const HeadOperands o = head_operands(d, kv, hb);
    const T* rows = qkv + hb.b * S * W;
    const T* keys = key_rows(d, kv, hb.b);
    // Going forward the probabilities, and the context made from them, are written into memory a
    // whole pass unused; everything else was just computed (gemm_call.h's cold operands).
    dev.gemm_batched({.name = "attn", .call = "scores", .cold_c = true},
                     matrix(probs + o.probs, S, K), matrix(rows + o.q, S, D, W), Op::none,
                     matrix(keys + o.k, K, D, kv.stride), Op::transpose, Accumulate::overwrite,
                     {hb.count, G * D, D, G * S * K}, stats);
    dev.causal_softmax_forward(probs + o.probs, {hb.count, G * S * K, S, K}, scale, d.positions());
    if (ctx == nullptr) return;
    dev.gemm_batched({.name = "attn", .call = "context", .cold_c = true},
                     matrix(ctx + hb.b * S * C + o.q, S, D, C), matrix(probs + o.probs, S, K),
                     Op::none, matrix(keys + o.v, K, D, kv.stride), Op::none, Accumulate::overwrite,
                     {hb.count, G * S * K, D, G * D}, stats);
  });
}

template <class T>
void attention_backward(Kernels<T>& dev, const LayerDims& d, const T* qkv, KeyValues<const T*> kv,
                        const T* probs, const T* dctx, T* dqkv, KeyValues<T*> dkv, T* scratch,
                        MatmulStats* stats) {
  const int64_t S = d.seq, K = d.kv_seq(), W = d.qkv_width(), D = d.head_dim,
                C = d.heads * d.head_dim, KV = d.kv_heads * d.head_dim;
  const int64_t G = d.heads / d.kv_heads;
  const compute_t<T> scale = softmax_scale<compute_t<T>>(d);
  // k and v gradients accumulate over a group's heads.
  dev.fill(matrix(dkv.rows + dkv.k, d.batch * K, KV, dkv.stride), T(0));
  dev.fill(matrix(dkv.rows + dkv.v, d.batch * K, KV, dkv.stride), T(0));
  for_each_head_batch(dev, d, [&](const HeadBatch& hb) {
    const HeadOperands o = head_operands(d, kv, hb);
    const HeadOperands dout = head_operands(d, dkv, hb);
    const T* rows = qkv + hb.b * S * W;
    const T* keys = key_rows(d, kv, hb.b);
    T* dkeys = key_rows(d, dkv, hb.b);
    const auto dctx_h = matrix(dctx + hb.b * S * C + o.q, S, D, C);
    const auto p = matrix(probs + o.probs, S, K);
    const auto dscores = matrix(scratch, S, K);
    // dP = dctx·vᵀ;  dv += Pᵀ·dctx. Going backward the saved q, k, v and probabilities come from
    // memory.
    dev.gemm_batched({.name = "attn", .call = "dP", .cold_b = true}, dscores, dctx_h, Op::none,
                     matrix(keys + o.v, K, D, kv.stride), Op::transpose, Accumulate::overwrite,
                     {hb.count, G * D, D, S * K}, stats);
    dev.gemm_batched({.name = "attn", .call = "dv", .cold_a = true},
                     matrix(dkeys + dout.v, K, D, dkv.stride), p, Op::transpose, dctx_h, Op::none,
                     Accumulate::add, {hb.count, G * S * K, G * D, D}, stats);
    // dScores = P ⊙ (dP − rowsum(P ⊙ dP)), times the 1/√d the scores were scaled by.
    dev.causal_softmax_backward(probs + o.probs, {hb.count, G * S * K, S, K}, scratch,
                                {hb.count, S * K, S, K}, scale, d.positions());
    // dq = dScores·k;  dk += dScoresᵀ·q.
    dev.gemm_batched({.name = "attn", .call = "dq", .cold_b = true, .cold_c = true},
                     matrix(dqkv + hb.b * S * W + o.q, S, D, W), dscores, Op::none,
                     matrix(keys + o.k, K, D, kv.stride), Op::none, Accumulate::overwrite,
                     {hb.count, S * K, D, G * D}, stats);
    dev.gemm_batched({.name = "attn", .call = "dk", .cold_b = true},
                     matrix(dkeys + dout.k, K, D, dkv.stride), dscores, Op::transpose,
                     matrix(rows + o.q, S, D, W), Op::none, Accumulate::add,
                     {hb.count, S * K, G * D, D}, stats);
  });
}

#define SHARDPLAN_INSTANTIATE(T)                                                                   \
  template void attention_forward<T>(Kernels<T>&, const LayerDims&, const T*, KeyValues<const T*>, \
                                     T*, T*, MatmulStats*);                                        \
  template void attention_backward<T>(Kernels<T>&, const LayerDims&, const T*,                     \
                                      KeyValues<const T*>, const T*, const T*, T*, KeyValues<T*>,  \
                                      T*, MatmulStats*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
