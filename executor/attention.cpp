#include "executor/attention.h"

#include <algorithm>
#include <cmath>

#include "executor/elementwise.h"

namespace shardplan {

namespace {

// Where head h's q starts within a query row, and its group's k and v within a key row.
struct HeadColumns {
  int64_t q, k, v;
};
template <class P>
HeadColumns head_columns(const LayerDims& d, const KeyValues<P>& kv, int64_t h) {
  const int64_t group = h / (d.heads / d.kv_heads);
  return {h * d.head_dim, kv.k + group * d.head_dim, kv.v + group * d.head_dim};
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
void attention_probs(const LayerDims& d, const T* qkv, KeyValues<const T*> kv, T* probs,
                     MatmulStats* stats) {
  const int64_t S = d.seq, K = d.kv_seq(), W = d.qkv_width(), D = d.head_dim;
  const T scale = softmax_scale<T>(d);
  for (int64_t b = 0; b < d.batch; ++b) {
    const T* rows = qkv + b * S * W;
    const T* keys = key_rows(d, kv, b);
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, kv, h);
      T* p = probs + (b * d.heads + h) * S * K;
      gemm<T>(view(p, S, K), view(rows + c.q, S, D, W), Op::none, view(keys + c.k, K, D, kv.stride),
              Op::transpose, Accumulate::overwrite, stats);
      for (int64_t i = 0; i < S; ++i) {
        T* row = p + i * K;
        const int64_t last = d.position(i);  // the causal mask: keys up to the query's position
        T row_max = row[0] * scale;
        for (int64_t j = 1; j <= last; ++j) row_max = std::max(row_max, row[j] * scale);
        T sum = 0;
        for (int64_t j = 0; j <= last; ++j)
          sum += (row[j] = ew::softmax_numerator(row[j] * scale, row_max));
        for (int64_t j = 0; j <= last; ++j) row[j] /= sum;
        std::fill(row + last + 1, row + K, T(0));
      }
    }
  }
}

template <class T>
void attention_context(const LayerDims& d, KeyValues<const T*> kv, const T* probs, T* ctx,
                       MatmulStats* stats) {
  const int64_t S = d.seq, K = d.kv_seq(), D = d.head_dim, C = d.heads * d.head_dim;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, kv, h);
      gemm<T>(view(ctx + b * S * C + h * D, S, D, C), view(probs + (b * d.heads + h) * S * K, S, K),
              Op::none, view(key_rows(d, kv, b) + c.v, K, D, kv.stride), Op::none,
              Accumulate::overwrite, stats);
    }
}

template <class T>
void attention_backward(const LayerDims& d, const T* qkv, KeyValues<const T*> kv, const T* probs,
                        const T* dctx, T* dqkv, KeyValues<T*> dkv, T* scratch, MatmulStats* stats) {
  const int64_t S = d.seq, K = d.kv_seq(), W = d.qkv_width(), D = d.head_dim,
                C = d.heads * d.head_dim, KV = d.kv_heads * d.head_dim;
  const T scale = softmax_scale<T>(d);
  for (int64_t r = 0; r < d.batch * K; ++r) {  // k and v gradients accumulate over a group's heads
    T* row = dkv.rows + r * dkv.stride;
    std::fill(row + dkv.k, row + dkv.k + KV, T(0));
    std::fill(row + dkv.v, row + dkv.v + KV, T(0));
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    const T* rows = qkv + b * S * W;
    const T* keys = key_rows(d, kv, b);
    T* dq_rows = dqkv + b * S * W;
    T* dkeys = key_rows(d, dkv, b);
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, kv, h), dc = head_columns(d, dkv, h);
      const T* p = probs + (b * d.heads + h) * S * K;
      const auto dctx_h = view(dctx + b * S * C + h * D, S, D, C);
      // dP = dctx·vᵀ;  dv += Pᵀ·dctx.
      gemm<T>(view(scratch, S, K), dctx_h, Op::none, view(keys + c.v, K, D, kv.stride),
              Op::transpose, Accumulate::overwrite, stats);
      gemm<T>(view(dkeys + dc.v, K, D, dkv.stride), view(p, S, K), Op::transpose, dctx_h, Op::none,
              Accumulate::add, stats);
      // dScores = P ⊙ (dP − rowsum(P ⊙ dP)), times the 1/√d the scores were scaled by.
      for (int64_t i = 0; i < S; ++i) {
        const T* pr = p + i * K;
        T* dr = scratch + i * K;
        const int64_t last = d.position(i);
        T dot = 0;
        for (int64_t j = 0; j <= last; ++j) dot += pr[j] * dr[j];
        for (int64_t j = 0; j <= last; ++j)
          dr[j] = ew::softmax_input_grad(pr[j], dr[j], dot) * scale;
        std::fill(dr + last + 1, dr + K, T(0));
      }
      // dq = dScores·k;  dk += dScoresᵀ·q.
      const T* dscores = scratch;
      gemm<T>(view(dq_rows + c.q, S, D, W), view(dscores, S, K), Op::none,
              view(keys + c.k, K, D, kv.stride), Op::none, Accumulate::overwrite, stats);
      gemm<T>(view(dkeys + dc.k, K, D, dkv.stride), view(dscores, S, K), Op::transpose,
              view(rows + c.q, S, D, W), Op::none, Accumulate::add, stats);
    }
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void attention_probs<T>(const LayerDims&, const T*, KeyValues<const T*>, T*,          \
                                   MatmulStats*);                                                \
  template void attention_context<T>(const LayerDims&, KeyValues<const T*>, const T*, T*,        \
                                     MatmulStats*);                                              \
  template void attention_backward<T>(const LayerDims&, const T*, KeyValues<const T*>, const T*, \
                                      const T*, T*, KeyValues<T*>, T*, MatmulStats*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
