// One thread per element (grid-stride loops): fills, bias and residual adds, the MLP activations,
// the embedding's row gathers and position adds, the cross-entropy gradient, Adam and the
// conversions between bf16 and fp32, each calling the per-element math the CPU loops call
// (executor/elementwise.h) on fp32 values and storing the result once.
#include "executor/cuda/kernel_launch.h"
#include "executor/cuda/launch_config.cuh"
#include "executor/elementwise.h"

namespace shardplan::cuda {

namespace {

template <class T>
__global__ void fill_kernel(T* p, int64_t rows, int64_t cols, int64_t stride, T value) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride())
    p[e / cols * stride + e % cols] = value;
}

template <class T>
__global__ void bias_forward_kernel(T* y, const T* b, int64_t rows, int64_t cols) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride())
    y[e] = load(y[e]) + load(b[e % cols]);
}

template <class T>
__global__ void residual_add_kernel(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) {
  for (int64_t e = grid_index(); e < rows * cols; e += grid_stride())
    y[e] = load(y[e]) + (load(x[e]) + (bias != nullptr ? load(bias[e % cols]) : 0.0f));
}

template <class T>
__global__ void gelu_forward_kernel(const T* u, int64_t n, T* a) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) a[e] = ew::gelu(load(u[e]));
}

template <class T>
__global__ void gelu_backward_kernel(const T* u, const T* da, int64_t n, T* du) {
  for (int64_t e = grid_index(); e < n; e += grid_stride())
    du[e] = load(da[e]) * ew::gelu_grad(load(u[e]));
}

// u is [rows, 2·ffn] = [gate | up]; a and da are [rows, ffn].
template <class T>
__global__ void swiglu_forward_kernel(const T* u, int64_t rows, int64_t ffn, T* a) {
  for (int64_t e = grid_index(); e < rows * ffn; e += grid_stride()) {
    const int64_t r = e / ffn, j = e % ffn;
    const T* gate = u + r * 2 * ffn;
    a[e] = ew::swiglu(load(gate[j]), load(gate[ffn + j]));
  }
}

template <class T>
__global__ void swiglu_backward_kernel(const T* u, const T* da, int64_t rows, int64_t ffn, T* du) {
  for (int64_t e = grid_index(); e < rows * ffn; e += grid_stride()) {
    const int64_t r = e / ffn, j = e % ffn;
    const T* gate = u + r * 2 * ffn;
    T* dgate = du + r * 2 * ffn;
    const float g = load(gate[j]), up = load(gate[ffn + j]), d = load(da[e]);
    dgate[j] = ew::swiglu_grad_gate(g, up, d);
    dgate[ffn + j] = ew::swiglu_grad_up(g, d);
  }
}

template <class T>
__global__ void embedding_rows_kernel(const int32_t* tokens, int64_t count, const T* table,
                                      int64_t row_begin, int64_t row_end, int64_t hidden, T* out) {
  for (int64_t e = grid_index(); e < count * hidden; e += grid_stride()) {
    const int64_t t = e / hidden, token = tokens[t];
    if (token >= row_begin && token < row_end)
      out[e] = table[(token - row_begin) * hidden + e % hidden];
  }
}

template <class T>
__global__ void position_embedding_add_kernel(T* out, int64_t rows, int64_t hidden, const T* wpe,
                                              TokenPositions positions, int64_t first_row) {
  for (int64_t e = grid_index(); e < rows * hidden; e += grid_stride()) {
    const int64_t r = e / hidden;
    out[e] = load(out[e]) +
             load(wpe[positions.of((first_row + r) % positions.seq) * hidden + e % hidden]);
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

template <class T>
__global__ void adam_kernel(AdamConfig c, float bias_correction1, float bias_correction2,
                            float* master, const T* grads, float* m, float* v, T* params,
                            int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) {
    ew::adam_update(master[e], load(grads[e]), m[e], v[e], c.lr, c.beta1, c.beta2, c.eps,
                    c.weight_decay, bias_correction1, bias_correction2);
    if (params != nullptr) params[e] = master[e];
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* from, To* to, int64_t n) {
  for (int64_t e = grid_index(); e < n; e += grid_stride()) to[e] = load(from[e]);
}

}  // namespace

template <class T>
void launch_fill(T* p, int64_t rows, int64_t cols, int64_t stride, T value, cudaStream_t stream) {
  if (rows * cols == 0) return;
  fill_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(p, rows, cols, stride, value);
  SHARDPLAN_LAUNCH_CHECK(fill_kernel);
}

template <class T>
void launch_bias_forward(T* y, const T* b, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  bias_forward_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, b, rows, cols);
  SHARDPLAN_LAUNCH_CHECK(bias_forward_kernel);
}

template <class T>
void launch_residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  if (rows * cols == 0) return;
  residual_add_kernel<<<blocks_for(rows * cols), kThreads, 0, stream>>>(y, x, bias, rows, cols);
  SHARDPLAN_LAUNCH_CHECK(residual_add_kernel);
}

template <class T>
void launch_activation_forward(Gating kind, const T* u, int64_t rows, int64_t ffn, T* a,
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

template <class T>
void launch_activation_backward(Gating kind, const T* u, const T* da, int64_t rows, int64_t ffn,
                                T* du, cudaStream_t stream) {
  if (rows * ffn == 0) return;
  if (kind == Gating::gelu) {
    gelu_backward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, da, rows * ffn, du);
    SHARDPLAN_LAUNCH_CHECK(gelu_backward_kernel);
  } else {
    swiglu_backward_kernel<<<blocks_for(rows * ffn), kThreads, 0, stream>>>(u, da, rows, ffn, du);
    SHARDPLAN_LAUNCH_CHECK(swiglu_backward_kernel);
  }
}

template <class T>
void launch_embedding_rows(const int32_t* tokens, int64_t count, const T* table, int64_t row_begin,
                           int64_t row_end, int64_t hidden, T* out, cudaStream_t stream) {
  if (count * hidden == 0) return;
  embedding_rows_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(
      tokens, count, table, row_begin, row_end, hidden, out);
  SHARDPLAN_LAUNCH_CHECK(embedding_rows_kernel);
}

template <class T>
void launch_position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
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

template <class T>
void launch_adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                        float* master, const T* grads, float* m, float* v, T* params, int64_t count,
                        cudaStream_t stream) {
  if (count == 0) return;
  adam_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      config, bias_correction1, bias_correction2, master, grads, m, v, params, count);
  SHARDPLAN_LAUNCH_CHECK(adam_kernel);
}

template <class From, class To>
void launch_convert(const From* from, To* to, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  convert_kernel<<<blocks_for(count), kThreads, 0, stream>>>(from, to, count);
  SHARDPLAN_LAUNCH_CHECK(convert_kernel);
}

#define SHARDPLAN_INSTANTIATE(T)                                                                 \
  template void launch_fill<T>(T*, int64_t, int64_t, int64_t, T, cudaStream_t);                  \
  template void launch_bias_forward<T>(T*, const T*, int64_t, int64_t, cudaStream_t);            \
  template void launch_residual_add<T>(T*, const T*, const T*, int64_t, int64_t, cudaStream_t);  \
  template void launch_activation_forward<T>(Gating, const T*, int64_t, int64_t, T*,             \
                                             cudaStream_t);                                      \
  template void launch_activation_backward<T>(Gating, const T*, const T*, int64_t, int64_t, T*,  \
                                              cudaStream_t);                                     \
  template void launch_embedding_rows<T>(const int32_t*, int64_t, const T*, int64_t, int64_t,    \
                                         int64_t, T*, cudaStream_t);                             \
  template void launch_position_embedding_add<T>(T*, int64_t, int64_t, const T*, TokenPositions, \
                                                 int64_t, cudaStream_t);                         \
  template void launch_adam_update<T>(const AdamConfig&, float, float, float*, const T*, float*, \
                                      float*, T*, int64_t, cudaStream_t);
SHARDPLAN_FOR_STORAGE_TYPES(SHARDPLAN_INSTANTIATE)
#undef SHARDPLAN_INSTANTIATE
template void launch_convert<bf16, float>(const bf16*, float*, int64_t, cudaStream_t);
template void launch_convert<float, bf16>(const float*, bf16*, int64_t, cudaStream_t);

}  // namespace shardplan::cuda
