#include "executor/attention.h"

#include <algorithm>
#include <cmath>

#include "executor/elementwise.h"

namespace shardplan {

namespace {

// Where head h's q, and its group's k and v, start within one sequence's rows of qkv.
struct HeadColumns {
  int64_t q, k, v;
};
HeadColumns head_columns(const LayerDims& d, int64_t h) {
  const int64_t group = h / (d.heads / d.kv_heads);
  return {h * d.head_dim, (d.heads + group) * d.head_dim,
          (d.heads + d.kv_heads + group) * d.head_dim};
}

template <class T>
T softmax_scale(const LayerDims& d) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(d.head_dim)));
}

}  // namespace

template <class T>
void attention_probs(const LayerDims& d, const T* qkv, T* probs, MatmulStats* stats) {
  const int64_t S = d.seq, W = d.qkv_width(), D = d.head_dim;
  const T scale = softmax_scale<T>(d);
  for (int64_t b = 0; b < d.batch; ++b) {
    const T* rows = qkv + b * S * W;
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, h);
      T* p = probs + (b * d.heads + h) * S * S;
      gemm<T>(view(p, S, S), view(rows + c.q, S, D, W), Op::none, view(rows + c.k, S, D, W),
              Op::transpose, Accumulate::overwrite, stats);
      for (int64_t i = 0; i < S; ++i) {
        T* row = p + i * S;
        T row_max = row[0] * scale;
        for (int64_t j = 1; j <= i; ++j) row_max = std::max(row_max, row[j] * scale);
        T sum = 0;
        for (int64_t j = 0; j <= i; ++j)
          sum += (row[j] = ew::softmax_numerator(row[j] * scale, row_max));
        for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
        std::fill(row + i + 1, row + S, T(0));
      }
    }
  }
}

template <class T>
void attention_context(const LayerDims& d, const T* qkv, const T* probs, T* ctx,
                       MatmulStats* stats) {
  const int64_t S = d.seq, W = d.qkv_width(), D = d.head_dim, C = d.heads * d.head_dim;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, h);
      gemm<T>(view(ctx + b * S * C + h * D, S, D, C), view(probs + (b * d.heads + h) * S * S, S, S),
              Op::none, view(qkv + b * S * W + c.v, S, D, W), Op::none, Accumulate::overwrite,
              stats);
    }
}

template <class T>
void attention_backward(const LayerDims& d, const T* qkv, const T* probs, const T* dctx, T* dqkv,
                        T* scratch, MatmulStats* stats) {
  const int64_t S = d.seq, W = d.qkv_width(), D = d.head_dim, C = d.heads * d.head_dim;
  const T scale = softmax_scale<T>(d);
  std::fill(dqkv, dqkv + d.tokens() * W,
            T(0));  // k and v gradients accumulate over a group's heads
  for (int64_t b = 0; b < d.batch; ++b) {
    const T* rows = qkv + b * S * W;
    T* drows = dqkv + b * S * W;
    for (int64_t h = 0; h < d.heads; ++h) {
      const HeadColumns c = head_columns(d, h);
      const T* p = probs + (b * d.heads + h) * S * S;
      const auto dctx_h = view(dctx + b * S * C + h * D, S, D, C);
      // dP = dctx·vᵀ;  dv += Pᵀ·dctx.
      gemm<T>(view(scratch, S, S), dctx_h, Op::none, view(rows + c.v, S, D, W), Op::transpose,
              Accumulate::overwrite, stats);
      gemm<T>(view(drows + c.v, S, D, W), view(p, S, S), Op::transpose, dctx_h, Op::none,
              Accumulate::add, stats);
      // dScores = P ⊙ (dP − rowsum(P ⊙ dP)), times the 1/√d the scores were scaled by.
      for (int64_t i = 0; i < S; ++i) {
        const T* pr = p + i * S;
        T* dr = scratch + i * S;
        T dot = 0;
        for (int64_t j = 0; j <= i; ++j) dot += pr[j] * dr[j];
        for (int64_t j = 0; j <= i; ++j) dr[j] = ew::softmax_input_grad(pr[j], dr[j], dot) * scale;
        std::fill(dr + i + 1, dr + S, T(0));
      }
      // dq = dScores·k;  dk += dScoresᵀ·q.
      const T* dscores = scratch;
      gemm<T>(view(drows + c.q, S, D, W), view(dscores, S, S), Op::none, view(rows + c.k, S, D, W),
              Op::none, Accumulate::overwrite, stats);
      gemm<T>(view(drows + c.k, S, D, W), view(dscores, S, S), Op::transpose,
              view(rows + c.q, S, D, W), Op::none, Accumulate::add, stats);
    }
  }
}

#define SHARDPLAN_INSTANTIATE(T)                                                              \
  template void attention_probs<T>(const LayerDims&, const T*, T*, MatmulStats*);             \
  template void attention_context<T>(const LayerDims&, const T*, const T*, T*, MatmulStats*); \
  template void attention_backward<T>(const LayerDims&, const T*, const T*, const T*, T*, T*, \
                                      MatmulStats*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
