#include "executor/layers/cross_entropy.h"

#include <algorithm>

#include "executor/elementwise.h"

namespace shardplan {

template <class T>
void logits_row_max(const T* logits, int64_t rows, int64_t cols, T* row_max) {
  for (int64_t r = 0; r < rows; ++r)
    row_max[r] = *std::max_element(logits + r * cols, logits + (r + 1) * cols);
}

template <class T>
void logits_target(const T* logits, const int32_t* targets, int64_t rows, int64_t cols,
                   ElementRange vocab, T* target_logit) {
  for (int64_t r = 0; r < rows; ++r) {
    const bool mine = targets[r] >= vocab.begin && targets[r] < vocab.end;
    target_logit[r] = mine ? logits[r * cols + (targets[r] - vocab.begin)] : T(0);
  }
}

template <class T>
void logits_exponentiate(T* logits, int64_t rows, int64_t cols, const T* row_max, T* sum_exp) {
  for (int64_t r = 0; r < rows; ++r) {
    T sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += (logits[r * cols + j] = ew::softmax_numerator(logits[r * cols + j], row_max[r]));
    sum_exp[r] = sum;
  }
}

template <class T>
double token_loss_sum(const T* row_max, const T* sum_exp, const T* target_logit, int64_t rows) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r)
    total += ew::cross_entropy_loss(row_max[r], sum_exp[r], target_logit[r]);
  return total;
}

template <class T>
void logits_backward(T* exp_logits, const T* sum_exp, const int32_t* targets, int64_t rows,
                     int64_t cols, ElementRange vocab, T scale) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      T& v = exp_logits[r * cols + j];
      v = ew::cross_entropy_logit_grad(v / sum_exp[r], j + vocab.begin == targets[r], scale);
    }
}

#define SHARDPLAN_INSTANTIATE(T)                                                                \
  template void logits_row_max<T>(const T*, int64_t, int64_t, T*);                              \
  template void logits_target<T>(const T*, const int32_t*, int64_t, int64_t, ElementRange, T*); \
  template void logits_exponentiate<T>(T*, int64_t, int64_t, const T*, T*);                     \
  template double token_loss_sum<T>(const T*, const T*, const T*, int64_t);                     \
  template void logits_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, ElementRange, T);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(double)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
