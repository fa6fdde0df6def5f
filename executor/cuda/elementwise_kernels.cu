// One thread per element (grid-stride loops): fills, bias and residual adds, the MLP activations,
// the embedding's row gathers and position adds, the cross-entropy gradient and Adam, each calling
// the per-element math the CPU loops call (executor/elementwise.h).
#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"
#include "executor/elementwise.h"

namespace shardplan::cuda {

namespace {

__global__ void fill_kernel(float* p, int64_t rows, int64_t cols, int64_t stride, float value) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride())
    p[e / cols * stride + e % cols] = value;
}

__global__ void bias_forward_kernel(float* y, const float* b, int64_t rows, int64_t cols) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride()) y[e] += b[e % cols];
}

__global__ void residual_add_kernel(float* y, const float* x, const float* bias, int64_t rows,
                                    int64_t cols) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride())
    y[e] += x[e] + (bias != nullptr ? bias[e % cols] : 0.0f);
}

__global__ void gelu_forward_kernel(const float* u, int64_t n, float* a) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) a[e] = ew::gelu(u[e]);
}

__global__ void gelu_backward_kernel(const float* u, const float* da, int64_t n, float* du) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) du[e] = da[e] * ew::gelu_grad(u[e]);
}

// u is [rows, 2·ffn] = [gate | up]; a and da are [rows, ffn].
__global__ void swiglu_forward_kernel(const float* u, int64_t rows, int64_t ffn, float* a) {
  for (int64_t e = grid_index(); e < rows * ffn; e += grid_stride()) {
    const int64_t r = e / ffn, j = e % ffn;
    const float* gate = u + r * 2 * ffn;
    a[e] = ew::swiglu(gate[j], gate[ffn + j]);
  }
}

__global__ void swiglu_backward_kernel(const float* u, const float* da, int64_t rows, int64_t ffn,
                                       float* du) {
  for (int64_t e = grid_index(); e < rows * ffn; e += grid_stride()) {
    const int64_t r = e / ffn, j = e % ffn;
    const float* gate = u + r * 2 * ffn;
    float* dgate = du + r * 2 * ffn;
    dgate[j] = ew::swiglu_grad_gate(gate[j], gate[ffn + j], da[e]);
    dgate[ffn + j] = ew::swiglu_grad_up(gate[j], da[e]);
  }
}

__global__ void embedding_rows_kernel(const int32_t* tokens, int64_t count, const float* table,
                                      int64_t row_begin, int64_t row_end, int64_t hidden,
                                      float* out) {
  for (int64_t e = grid_index(); e < count * hidden; e += grid_stride()) {
    const int64_t t = e / hidden, token = tokens[t];
    if (token >= row_begin && token < row_end)
      out[e] = table[(token - row_begin) * hidden + e % hidden];
  }
}

__global__ void position_embedding_add_kernel(float* out, int64_t rows, int64_t hidden,
                                              const float* wpe, TokenPositions positions,
                                              int64_t first_row) {
  for (int64_t e = grid_index(); e < rows * hidden; e += grid_stride()) {
    const int64_t r = e / hidden;
    out[e] += wpe[positions.of((first_row + r) % positions.seq) * hidden + e % hidden];
  }
}

__global__ void logits_backward_kernel(float* exp_logits, const float* sum_exp,
                                       const int32_t* targets, int64_t rows, int64_t cols,
                                       int64_t vocab_begin, float scale) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride()) {
    const int64_t r = e / cols, j = e % cols;
    exp_logits[e] = ew::cross_entropy_logit_grad(exp_logits[e] / sum_exp[r],
                                                 j + vocab_begin == targets[r], scale);
  }
}

__global__ void adam_kernel(AdamConfig c, float bias_correction1, float bias_correction2,
                            float* params, const float* grads, float* m, float* v, int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride())
    ew::adam_update(params[e], grads[e], m[e], v[e], c.lr, c.beta1, c.beta2, c.eps, c.weight_decay,
                    bias_correction1, bias_correction2);
}

}  // namespace

void launch_fill(float* p, int64_t rows, int64_t cols, int64_t stride, float value,
                 cudaStream_t stream) {
  if (rows * cols == 0) return;
  fill_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(p, rows, cols, stride, value);
  SHARDPLAN_LAUNCH_CHECK(fill_kernel);
}

void launch_bias_forward(float* y, const float* b, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  if (rows * cols == 0) return;
  bias_forward_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, b, rows, cols);
  SHARDPLAN_LAUNCH_CHECK(bias_forward_kernel);
}

void launch_residual_add(float* y, const float* x, const float* bias, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  if (rows * cols == 0) return;
  residual_add_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, x, bias, rows, cols);
  SHARDPLAN_LAUNCH_CHECK(residual_add_kernel);
}

void launch_activation_forward(Gating kind, const float* u, int64_t rows, int64_t ffn, float* a,
                               cudaStream_t stream) {
  if (rows * ffn == 0) return;
  if (kind == Gating::gelu) {
    gelu_forward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, rows * ffn, a);
    SHARDPLAN_LAUNCH_CHECK(gelu_forward_kernel);
  } else {
    swiglu_forward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, rows, ffn, a);
    SHARDPLAN_LAUNCH_CHECK(swiglu_forward_kernel);
  }
}

void launch_activation_backward(Gating kind, const float* u, const float* da, int64_t rows,
                                int64_t ffn, float* du, cudaStream_t stream) {
  if (rows * ffn == 0) return;
  if (kind == Gating::gelu) {
    gelu_backward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, da, rows * ffn, du);
    SHARDPLAN_LAUNCH_CHECK(gelu_backward_kernel);
  } else {
    swiglu_backward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, da, rows, ffn, du);
    SHARDPLAN_LAUNCH_CHECK(swiglu_backward_kernel);
  }
}

void launch_embedding_rows(const int32_t* tokens, int64_t count, const float* table,
                           int64_t row_begin, int64_t row_end, int64_t hidden, float* out,
                           cudaStream_t stream) {
  if (count * hidden == 0) return;
  embedding_rows_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(
      tokens, count, table, row_begin, row_end, hidden, out);
  SHARDPLAN_LAUNCH_CHECK(embedding_rows_kernel);
}

void launch_position_embedding_add(float* out, int64_t rows, int64_t hidden, const float* wpe,
                                   TokenPositions positions, int64_t first_row,
                                   cudaStream_t stream) {
  if (rows * hidden == 0) return;
  position_embedding_add_kernel<<<blocks_for(rows * hidden), kThreads, 0, stream>>>(
      out, rows, hidden, wpe, positions, first_row);
  SHARDPLAN_LAUNCH_CHECK(position_embedding_add_kernel);
}

void launch_logits_backward(float* exp_logits, const float* sum_exp, const int32_t* targets,
                            int64_t rows, int64_t cols, int64_t vocab_begin, float scale,
                            cudaStream_t stream) {
  if (rows * cols == 0) return;
  logits_backward_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(
      exp_logits, sum_exp, targets, rows, cols, vocab_begin, scale);
  SHARDPLAN_LAUNCH_CHECK(logits_backward_kernel);
}

void launch_adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                        float* params, const float* grads, float* m, float* v, int64_t count,
                        cudaStream_t stream) {
  if (count == 0) return;
  adam_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      config, bias_correction1, bias_correction2, params, grads, m, v, count);
  SHARDPLAN_LAUNCH_CHECK(adam_kernel);
}

}  // namespace shardplan::cuda
