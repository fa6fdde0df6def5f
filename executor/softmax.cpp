#include "executor/softmax.h"

#include <algorithm>

#include "executor/elementwise.h"

namespace shardplan {

template <class T>
void causal_softmax_forward(T* scores, const ScoreBlocks& blocks, T scale,
                            TokenPositions positions) {
  const int64_t K = blocks.cols;
  for (int64_t b = 0; b < blocks.count; ++b)
    for (int64_t i = 0; i < blocks.rows; ++i) {
      T* row = scores + b * blocks.stride + i * K;
      const int64_t last = positions.of(i);  // the causal mask: keys up to the query's position
      T row_max = row[0] * scale;
      for (int64_t j = 1; j <= last; ++j) row_max = std::max(row_max, row[j] * scale);
      T sum = 0;
      for (int64_t j = 0; j <= last; ++j)
        sum += (row[j] = ew::softmax_numerator(row[j] * scale, row_max));
      for (int64_t j = 0; j <= last; ++j) row[j] /= sum;
      std::fill(row + last + 1, row + K, T(0));
    }
}

template <class T>
void causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks, T* grads,
                             const ScoreBlocks& grad_blocks, T scale, TokenPositions positions) {
  const int64_t K = grad_blocks.cols;
  for (int64_t b = 0; b < grad_blocks.count; ++b)
    for (int64_t i = 0; i < grad_blocks.rows; ++i) {
      const T* pr = probs + b * probs_blocks.stride + i * K;
      T* dr = grads + b * grad_blocks.stride + i * K;
      const int64_t last = positions.of(i);
      T dot = 0;
      for (int64_t j = 0; j <= last; ++j) dot += pr[j] * dr[j];
      for (int64_t j = 0; j <= last; ++j) dr[j] = ew::softmax_input_grad(pr[j], dr[j], dot) * scale;
      std::fill(dr + last + 1, dr + K, T(0));
    }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void causal_softmax_forward<T>(T*, const ScoreBlocks&, T, TokenPositions);            \
  template void causal_softmax_backward<T>(const T*, const ScoreBlocks&, T*, const ScoreBlocks&, \
                                           T, TokenPositions);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
