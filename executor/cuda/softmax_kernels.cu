// Attention's causal softmax (executor/softmax.h), one block per score row: the row maximum over
// the keys the query sees, then exp(x·scale − max) and their sum, then the division; keys past the
// query's position (by its position in the whole sequence, token_positions.h) are set to 0.
#include <math_constants.h>

#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"
#include "executor/elementwise.h"

namespace shardplan::cuda {

namespace {

// Row r of the `count`·rows score rows: block r / rows, query r % rows.
__device__ int64_t block_offset(int64_t r, int64_t rows, int64_t stride, int64_t cols) {
  return r / rows * stride + r % rows * cols;
}

__global__ void causal_softmax_forward_kernel(float* scores, int64_t stride, int64_t rows,
                                              int64_t cols, float scale, TokenPositions positions) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  float* row = scores + block_offset(r, rows, stride, cols);
  const int64_t last = positions.of(r % rows);
  float m = -CUDART_INF_F;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) m = fmaxf(m, row[j] * scale);
  m = block_reduce(m, Max{}, -CUDART_INF_F, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x)
    sum += (row[j] = ew::softmax_numerator(row[j] * scale, m));
  sum = block_reduce(sum, Sum{}, 0.0f, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) row[j] = j <= last ? row[j] / sum : 0.0f;
}

__global__ void causal_softmax_backward_kernel(const float* probs, int64_t probs_stride,
                                               float* grads, int64_t grads_stride, int64_t rows,
                                               int64_t cols, float scale,
                                               TokenPositions positions) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const float* p = probs + block_offset(r, rows, probs_stride, cols);
  float* dp = grads + block_offset(r, rows, grads_stride, cols);
  const int64_t last = positions.of(r % rows);
  float dot = 0;
  for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) dot += p[j] * dp[j];
  dot = block_reduce(dot, Sum{}, 0.0f, shared);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    dp[j] = j <= last ? ew::softmax_input_grad(p[j], dp[j], dot) * scale : 0.0f;
}

}  // namespace

void launch_causal_softmax_forward(float* scores, int64_t count, int64_t stride, int64_t rows,
                                   int64_t cols, float scale, TokenPositions positions,
                                   cudaStream_t stream) {
  if (count * rows == 0) return;
  causal_softmax_forward_kernel<<<static_cast<unsigned>(count * rows), kThreads, 0, stream>>>(
      scores, stride, rows, cols, scale, positions);
  SHARDPLAN_LAUNCH_CHECK(causal_softmax_forward_kernel);
}

void launch_causal_softmax_backward(const float* probs, int64_t probs_stride, float* grads,
                                    int64_t grads_stride, int64_t count, int64_t rows, int64_t cols,
                                    float scale, TokenPositions positions, cudaStream_t stream) {
  if (count * rows == 0) return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(count * rows), kThreads, 0, stream>>>(
      probs, probs_stride, grads, grads_stride, rows, cols, scale, positions);
  SHARDPLAN_LAUNCH_CHECK(causal_softmax_backward_kernel);
}

}  // namespace shardplan::cuda
