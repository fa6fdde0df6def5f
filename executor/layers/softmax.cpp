#include "executor/layers/softmax.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "executor/bf16.h"
#include "executor/elementwise.h"

namespace shardplan {

template <class T>
void causal_softmax_forward(T* scores, const ScoreBlocks& blocks, compute_t<T> scale,
                            TokenPositions positions) {
  using C = compute_t<T>;
  const int64_t K = blocks.cols;
  // The numerators in C: the row itself, or a row of scratch when T is narrower (each probability
  // is then rounded once, after the division).
  std::vector<C> scratch(std::is_same_v<T, C> ? 0 : static_cast<size_t>(K));
  for (int64_t b = 0; b < blocks.count; ++b)
    for (int64_t i = 0; i < blocks.rows; ++i) {
      T* row = scores + b * blocks.stride + i * K;
      C* numerators = nullptr;
      if constexpr (std::is_same_v<T, C>)
        numerators = row;
      else
        numerators = scratch.data();
      const int64_t last = positions.of(i);  // the causal mask: keys up to the query's position
      C row_max = row[0] * scale;
      for (int64_t j = 1; j <= last; ++j) row_max = std::max(row_max, row[j] * scale);
      C sum = 0;
      for (int64_t j = 0; j <= last; ++j)
        sum += (numerators[j] = ew::softmax_numerator<C>(row[j] * scale, row_max));
      for (int64_t j = 0; j <= last; ++j) row[j] = numerators[j] / sum;
      std::fill(row + last + 1, row + K, T(0));
    }
}

template <class T>
void causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks, T* grads,
                             const ScoreBlocks& grad_blocks, compute_t<T> scale,
                             TokenPositions positions) {
  using C = compute_t<T>;
  const int64_t K = grad_blocks.cols;
  for (int64_t b = 0; b < grad_blocks.count; ++b)
    for (int64_t i = 0; i < grad_blocks.rows; ++i) {
      const T* pr = probs + b * probs_blocks.stride + i * K;
      T* dr = grads + b * grad_blocks.stride + i * K;
      const int64_t last = positions.of(i);
      C dot = 0;
      for (int64_t j = 0; j <= last; ++j) dot += C(pr[j]) * C(dr[j]);
      for (int64_t j = 0; j <= last; ++j)
        dr[j] = ew::softmax_input_grad<C>(pr[j], dr[j], dot) * scale;
      std::fill(dr + last + 1, dr + K, T(0));
    }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void causal_softmax_forward<T>(T*, const ScoreBlocks&, compute_t<T>, TokenPositions); \
  template void causal_softmax_backward<T>(const T*, const ScoreBlocks&, T*, const ScoreBlocks&, \
                                           compute_t<T>, TokenPositions);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
