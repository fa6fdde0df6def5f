// Attention's causal softmax (executor/layers/softmax.h), one block per score row: the row maximum
// over the keys the query sees, then exp(x·scale − max) and their sum, then the division; keys past
// the query's position (by its position in the whole sequence, token_positions.h) are set to 0. All
// in fp32: fp32 scores keep their numerators in place for the division; bf16 ones have them
// recomputed rather than stored, so that a bf16 probability is rounded once, after the division,
// as the CPU loop rounds it (softmax.cpp).
#include <math_constants.h>

#include <type_traits>

#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"
#include "executor/elementwise.h"

namespace shardplan::cuda {

namespace {

// Row r of the `count`·rows score rows: block r / rows, query r % rows.
__device__ int64_t block_offset(int64_t r, int64_t rows, int64_t stride, int64_t cols) {
  return r / rows * stride + r % rows * cols;
}

template <class T>
__global__ void causal_softmax_forward_kernel(T* scores, int64_t stride, int64_t rows, int64_t cols,
                                              float scale, TokenPositions positions) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  T* row = scores + block_offset(r, rows, stride, cols);
  const int64_t last = positions.of(r % rows);
  float m = -CUDART_INF_F;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) m = fmaxf(m, load(row[j]) * scale);
  m = block_reduce(m, Max{}, -CUDART_INF_F, shared);
  constexpr bool kInPlace = std::is_same<T, float>::value;
  float sum = 0;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) {
    const float e = ew::softmax_numerator(load(row[j]) * scale, m);
    if constexpr (kInPlace) row[j] = e;
    sum += e;
  }
  sum = block_reduce(sum, Sum{}, 0.0f, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if (j > last) {
      row[j] = 0.0f;
    } else if constexpr (kInPlace) {
      row[j] /= sum;
    } else {
      row[j] = ew::softmax_numerator(load(row[j]) * scale, m) / sum;
    }
  }
}

template <class T>
__global__ void causal_softmax_backward_kernel(const T* probs, int64_t probs_stride, T* grads,
                                               int64_t grads_stride, int64_t rows, int64_t cols,
                                               float scale, TokenPositions positions) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const T* p = probs + block_offset(r, rows, probs_stride, cols);
  T* dp = grads + block_offset(r, rows, grads_stride, cols);
  const int64_t last = positions.of(r % rows);
  float dot = 0;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) dot += load(p[j]) * load(dp[j]);
  dot = block_reduce(dot, Sum{}, 0.0f, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    dp[j] = j <= last ? ew::softmax_input_grad(load(p[j]), load(dp[j]), dot) * scale : 0.0f;
}

}  // namespace

template <class T>
void launch_causal_softmax_forward(T* scores, int64_t count, int64_t stride, int64_t rows,
                                   int64_t cols, float scale, TokenPositions positions,
                                   cudaStream_t stream) {
  if (count * rows == 0) return;
  causal_softmax_forward_kernel<<<static_cast<unsigned>(count * rows), kThreads, 0, stream>>>(
      scores, stride, rows, cols, scale, positions);
  SHARDPLAN_LAUNCH_CHECK(causal_softmax_forward_kernel);
}

template <class T>
void launch_causal_softmax_backward(const T* probs, int64_t probs_stride, T* grads,
                                    int64_t grads_stride, int64_t count, int64_t rows, int64_t cols,
                                    float scale, TokenPositions positions, cudaStream_t stream) {
  if (count * rows == 0) return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(count * rows), kThreads, 0, stream>>>(
      probs, probs_stride, grads, grads_stride, rows, cols, scale, positions);
  SHARDPLAN_LAUNCH_CHECK(causal_softmax_backward_kernel);
}

#define SHARDPLAN_INSTANTIATE(T)                                                                \
  template void launch_causal_softmax_forward<T>(T*, int64_t, int64_t, int64_t, int64_t, float, \
                                                 TokenPositions, cudaStream_t);                 \
  template void launch_causal_softmax_backward<T>(const T*, int64_t, T*, int64_t, int64_t,      \
                                                  int64_t, int64_t, float, TokenPositions,      \
                                                  cudaStream_t);
SHARDPLAN_FOR_STORAGE_TYPES(SHARDPLAN_INSTANTIATE)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan::cuda
