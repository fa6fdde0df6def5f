// Kernels that sum or take maxima: sums down columns (bias, norm weight and position embedding
// gradients), where each column's rows are added in order by one thread (or 8 interleaved partial
// sums added in order), so results do not depend on scheduling; and one block per row for the
// norms' and the cross-entropy's row statistics. Sums and statistics are fp32 whatever the storage
// type, and a gradient is added to its output once (rounded once in bf16, as the CPU loops store
// it). The per-element math is the CPU loops' (executor/elementwise.h).
#include <math_constants.h>

#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"
#include "executor/elementwise.h"

namespace shardplan::cuda {

namespace {

// Column sums: a block of 32 columns × 8 row lanes; lane y adds rows y, y + 8, ...; the 8 partial
// sums are then added in lane order. out[c] += the column's sum.
constexpr int kColumns = 32, kLanes = 8;

template <class Value, class T>
__global__ void column_sums_kernel(int64_t rows, int64_t cols, Value value, T* out) {
  __shared__ float partial[kLanes][kColumns + 1];  // +1: no bank conflicts on the transposed read
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  float sum = 0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kLanes) sum += value(r, c);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = 0;
    for (int lane = 0; lane < kLanes; ++lane) total += partial[lane][threadIdx.x];
    out[c] = load(out[c]) + total;
  }
}

template <class Value, class T>
void launch_column_sums(int64_t rows, int64_t cols, Value value, T* out, cudaStream_t stream) {
  if (rows * cols == 0) return;
  const auto blocks = static_cast<unsigned>((cols + kColumns - 1) / kColumns);
  column_sums_kernel<<<blocks, dim3(kColumns, kLanes), 0, stream>>>(rows, cols, value, out);
  SHARDPLAN_LAUNCH_CHECK(column_sums_kernel);
}

template <class T>
struct Element {  // m[r, c] of a packed rows × cols matrix
  const T* m;
  int64_t cols;
  __device__ float operator()(int64_t r, int64_t c) const { return load(m[r * cols + c]); }
};

template <class T>
struct NormalizedTimesGrad {  // dy[r, c] · x̂[r, c], x̂ from the row's saved mean and 1/σ
  const T* x;
  const T* dy;
  const float* row_stats;
  int64_t hidden;
  __device__ float operator()(int64_t r, int64_t c) const {
    const float xhat =
        ew::norm_normalize(load(x[r * hidden + c]), row_stats[2 * r], row_stats[2 * r + 1]);
    return load(dy[r * hidden + c]) * xhat;
  }
};

// The position table's gradient: thread (q, i) sums column i of the rows r whose position is
// this rank's q-th, (first_row + r) % seq = q, in row order, and adds the sum to the table once.
// Rows reach a position only through their q (TokenPositions::of is one-to-one), so each table
// element has one thread.
template <class T>
__global__ void position_embedding_backward_kernel(const T* dout, int64_t rows, int64_t hidden,
                                                   T* dwpe, TokenPositions positions,
                                                   int64_t first_row) {
  const int64_t seq = positions.seq;
  for (int64_t e = grid_index(); e < seq * hidden; e += grid_stride()) {
    const int64_t q = e / hidden, i = e % hidden;
    T* out = dwpe + positions.of(q) * hidden + i;
    float sum = load(*out);
    for (int64_t r = ((q - first_row) % seq + seq) % seq; r < rows; r += seq)
      sum += load(dout[r * hidden + i]);
    *out = sum;
  }
}

// A row's mean (0 for RMSNorm) and 1/σ, every thread of the row's block getting them.
struct RowStats {
  float mean, rstd;
};
template <class T>
__device__ RowStats row_stats(RowNorm kind, const T* xr, int64_t hidden, float eps, float* shared) {
  const auto n = static_cast<float>(hidden);
  float mean = 0;
  if (kind == RowNorm::layernorm) {
    float s = 0;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) s += load(xr[i]);
    mean = block_reduce(s, Sum{}, 0.0f, shared) / n;
  }
  float q = 0;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    q += (load(xr[i]) - mean) * (load(xr[i]) - mean);
  return {mean, ew::norm_rstd(block_reduce(q, Sum{}, 0.0f, shared) / n, eps)};
}

template <class T>
__global__ void norm_forward_kernel(RowNorm kind, const T* x, const T* weight, const T* bias,
                                    int64_t hidden, float eps, T* y) {
  __shared__ float shared[32];
  const T* xr = x + blockIdx.x * hidden;
  T* yr = y + blockIdx.x * hidden;
  const RowStats s = row_stats(kind, xr, hidden, eps, shared);
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    yr[i] = ew::norm_normalize(load(xr[i]), s.mean, s.rstd) * load(weight[i]) +
            (bias != nullptr ? load(bias[i]) : 0.0f);
}

// dx += the norm's input gradient (norm.h); the row's mean and 1/σ saved for the column sums.
template <class T>
__global__ void norm_backward_kernel(RowNorm kind, const T* x, const T* weight, const T* dy,
                                     int64_t hidden, float eps, T* dx, float* row_stats_out) {
  __shared__ float shared[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * hidden;
  const T *xr = x + offset, *dyr = dy + offset;
  const RowStats s = row_stats(kind, xr, hidden, eps, shared);
  float sum_g = 0, sum_g_xhat = 0;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float g = load(dyr[i]) * load(weight[i]);
    sum_g += g;
    sum_g_xhat += g * ew::norm_normalize(load(xr[i]), s.mean, s.rstd);
  }
  const auto n = static_cast<float>(hidden);
  const float mean_g =
      kind == RowNorm::layernorm ? block_reduce(sum_g, Sum{}, 0.0f, shared) / n : 0.0f;
  const float mean_g_xhat = block_reduce(sum_g_xhat, Sum{}, 0.0f, shared) / n;
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x)
    dx[offset + i] =
        load(dx[offset + i]) + ew::norm_input_grad(load(dyr[i]) * load(weight[i]),
                                                   ew::norm_normalize(load(xr[i]), s.mean, s.rstd),
                                                   s.rstd, mean_g, mean_g_xhat);
  if (threadIdx.x == 0) {
    row_stats_out[2 * blockIdx.x] = s.mean;
    row_stats_out[2 * blockIdx.x + 1] = s.rstd;
  }
}

__global__ void logits_row_max_kernel(const float* logits, int64_t cols, float* row_max) {
  __shared__ float shared[32];
  const float* row = logits + blockIdx.x * cols;
  float m = -CUDART_INF_F;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce(m, Max{}, -CUDART_INF_F, shared);
  if (threadIdx.x == 0) row_max[blockIdx.x] = m;
}

__global__ void logits_target_kernel(const float* logits, const int32_t* targets, int64_t rows,
                                     int64_t cols, int64_t vocab_begin, int64_t vocab_end,
                                     float* target_logit) {
  for (int64_t r = grid_index(); r < rows; r += grid_stride()) {
    const int64_t t = targets[r];
    target_logit[r] =
        t >= vocab_begin && t < vocab_end ? logits[r * cols + (t - vocab_begin)] : 0.0f;
  }
}

__global__ void logits_exponentiate_kernel(float* logits, int64_t cols, const float* row_max,
                                           float* sum_exp) {
  __shared__ float shared[32];
  float* row = logits + blockIdx.x * cols;
  const float m = row_max[blockIdx.x];
  float s = 0;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    s += (row[j] = ew::softmax_numerator(row[j], m));
  s = block_reduce(s, Sum{}, 0.0f, shared);
  if (threadIdx.x == 0) sum_exp[blockIdx.x] = s;
}

// One block: Σ_r loss[r] in double, as the CPU sums it.
__global__ void token_loss_sum_kernel(const float* row_max, const float* sum_exp,
                                      const float* target_logit, int64_t rows, double* total) {
  __shared__ double shared[32];
  double s = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    s += ew::cross_entropy_loss(row_max[r], sum_exp[r], target_logit[r]);
  s = block_reduce(s, Sum{}, 0.0, shared);
  if (threadIdx.x == 0) *total = s;
}

}  // namespace

template <class T>
void launch_bias_backward(const T* dy, int64_t rows, int64_t cols, T* db, cudaStream_t stream) {
  launch_column_sums(rows, cols, Element<T>{dy, cols}, db, stream);
}

template <class T>
void launch_position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                        TokenPositions positions, int64_t first_row,
                                        cudaStream_t stream) {
  if (rows * hidden == 0) return;
  position_embedding_backward_kernel<<<blocks_for(positions.seq * hidden), kThreads, 0, stream>>>(
      dout, rows, hidden, dwpe, positions, first_row);
  SHARDPLAN_LAUNCH_CHECK(position_embedding_backward_kernel);
}

template <class T>
void launch_norm_forward(RowNorm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                         int64_t hidden, float eps, T* y, cudaStream_t stream) {
  if (rows * hidden == 0) return;
  norm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(kind, x, weight, bias,
                                                                            hidden, eps, y);
  SHARDPLAN_LAUNCH_CHECK(norm_forward_kernel);
}

template <class T>
void launch_norm_backward(RowNorm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                          int64_t hidden, float eps, T* dx, T* dweight, T* dbias, float* row_stats,
                          cudaStream_t stream) {
  if (rows * hidden == 0) return;
  norm_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      kind, x, weight, dy, hidden, eps, dx, row_stats);
  SHARDPLAN_LAUNCH_CHECK(norm_backward_kernel);
  launch_column_sums(rows, hidden, NormalizedTimesGrad<T>{x, dy, row_stats, hidden}, dweight,
                     stream);
  if (dbias != nullptr) launch_column_sums(rows, hidden, Element<T>{dy, hidden}, dbias, stream);
}

void launch_logits_row_max(const float* logits, int64_t rows, int64_t cols, float* row_max,
                           cudaStream_t stream) {
  if (rows == 0) return;
  logits_row_max_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, cols,
                                                                              row_max);
  SHARDPLAN_LAUNCH_CHECK(logits_row_max_kernel);
}

void launch_logits_target(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                          int64_t vocab_begin, int64_t vocab_end, float* target_logit,
                          cudaStream_t stream) {
  if (rows == 0) return;
  logits_target_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(
      logits, targets, rows, cols, vocab_begin, vocab_end, target_logit);
  SHARDPLAN_LAUNCH_CHECK(logits_target_kernel);
}

void launch_logits_exponentiate(float* logits, int64_t rows, int64_t cols, const float* row_max,
                                float* sum_exp, cudaStream_t stream) {
  if (rows == 0) return;
  logits_exponentiate_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      logits, cols, row_max, sum_exp);
  SHARDPLAN_LAUNCH_CHECK(logits_exponentiate_kernel);
}

void launch_token_loss_sum(const float* row_max, const float* sum_exp, const float* target_logit,
                           int64_t rows, double* total, cudaStream_t stream) {
  token_loss_sum_kernel<<<1, kThreads, 0, stream>>>(row_max, sum_exp, target_logit, rows, total);
  SHARDPLAN_LAUNCH_CHECK(token_loss_sum_kernel);
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void launch_bias_backward<T>(const T*, int64_t, int64_t, T*, cudaStream_t);           \
  template void launch_position_embedding_backward<T>(const T*, int64_t, int64_t, T*,            \
                                                      TokenPositions, int64_t, cudaStream_t);    \
  template void launch_norm_forward<T>(RowNorm, const T*, const T*, const T*, int64_t, int64_t,  \
                                       float, T*, cudaStream_t);                                 \
  template void launch_norm_backward<T>(RowNorm, const T*, const T*, const T*, int64_t, int64_t, \
                                        float, T*, T*, T*, float*, cudaStream_t);
SHARDPLAN_FOR_STORAGE_TYPES(SHARDPLAN_INSTANTIATE)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan::cuda
