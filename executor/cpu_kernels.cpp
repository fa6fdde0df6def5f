#include "executor/cpu_kernels.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <type_traits>
#include <vector>

#include "executor/layers/activation.h"
#include "executor/layers/cross_entropy.h"
#include "executor/layers/embedding_rows.h"
#include "executor/layers/linear.h"
#include "executor/layers/norm.h"
#include "executor/layers/softmax.h"
#include "executor/state/adam.h"

namespace shardplan {

namespace {

// A strided matrix of T widened into packed fp32 scratch.
template <class T>
MatrixRef<const float> widened(MatrixRef<const T> m, std::vector<float>& scratch) {
  scratch.resize(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    std::copy(m.data + r * m.stride, m.data + r * m.stride + m.cols, scratch.begin() + r * m.cols);
  return {scratch.data(), m.rows, m.cols, m.cols};
}

// A bf16 GEMM as tensor cores and cuBLAS's CUBLAS_COMPUTE_32F run it (NVIDIA, "cuBLAS:
// cublasGemmEx", bf16 inputs with fp32 accumulation): the operands' exact fp32 values multiplied
// and summed in fp32, c added in fp32 when accumulating, and each output rounded to bf16 once. On a
// CPU core the operands are widened into fp32 scratch for Eigen's fp32 GEMM; the widening is part
// of the time.
void bf16_gemm(MatrixRef<bf16> c, MatrixRef<const bf16> a, Op op_a, MatrixRef<const bf16> b,
               Op op_b, Accumulate acc, MatmulStats* stats) {
  thread_local std::vector<float> sa, sb, sc;
  const MatrixRef<const float> fa = widened(a, sa), fb = widened(b, sb);
  if (acc == Accumulate::add)
    widened(MatrixRef<const bf16>(c), sc);
  else
    sc.resize(static_cast<size_t>(c.rows * c.cols));
  gemm<float>(view(sc.data(), c.rows, c.cols), view(fa.data, fa.rows, fa.cols), op_a,
              view(fb.data, fb.rows, fb.cols), op_b, acc, stats);
  for (int64_t r = 0; r < c.rows; ++r)
    std::copy(sc.begin() + r * c.cols, sc.begin() + (r + 1) * c.cols, c.data + r * c.stride);
}

}  // namespace

template <class T>
void CpuKernels<T>::run_gemm_batched(MatrixRef<T> c, MatrixRef<const T> a, Op op_a,
                                     MatrixRef<const T> b, Op op_b, Accumulate acc,
                                     const GemmBatch& batch, MatmulStats* stats) {
  for (int64_t i = 0; i < batch.count; ++i) {
    const MatrixRef<T> ci{c.data + i * batch.stride_c, c.rows, c.cols, c.stride};
    const MatrixRef<const T> ai{a.data + i * batch.stride_a, a.rows, a.cols, a.stride};
    const MatrixRef<const T> bi{b.data + i * batch.stride_b, b.rows, b.cols, b.stride};
    if constexpr (std::is_same_v<T, bf16>)
      bf16_gemm(ci, ai, op_a, bi, op_b, acc, stats);
    else
      gemm<T>(view(ci.data, ci.rows, ci.cols, ci.stride),
              view(ai.data, ai.rows, ai.cols, ai.stride), op_a,
              view(bi.data, bi.rows, bi.cols, bi.stride), op_b, acc, stats);
  }
}

template <class T>
void CpuKernels<T>::bias_forward(T* y, const T* b, int64_t rows, int64_t cols) {
  shardplan::bias_forward(y, b, rows, cols);
}
template <class T>
void CpuKernels<T>::residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) {
  shardplan::residual_add(y, x, bias, rows, cols);
}
template <class T>
void CpuKernels<T>::bias_backward(const T* dy, int64_t rows, int64_t cols, T* db) {
  shardplan::bias_backward(dy, rows, cols, db);
}
template <class T>
void CpuKernels<T>::norm_forward(Norm kind, const T* x, const T* weight, const T* bias,
                                 int64_t rows, int64_t hidden, T* y) {
  shardplan::norm_forward(kind, x, weight, bias, rows, hidden, y);
}
template <class T>
void CpuKernels<T>::norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                                  int64_t hidden, T* dx, T* dweight, T* dbias) {
  shardplan::norm_backward(kind, x, weight, dy, rows, hidden, dx, dweight, dbias);
}
template <class T>
void CpuKernels<T>::activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn,
                                       T* a) {
  shardplan::activation_forward(kind, u, rows, ffn, a);
}
template <class T>
void CpuKernels<T>::activation_backward(Activation kind, const T* u, const T* da, int64_t rows,
                                        int64_t ffn, T* du) {
  shardplan::activation_backward(kind, u, da, rows, ffn, du);
}
template <class T>
void CpuKernels<T>::causal_softmax_forward(T* scores, const ScoreBlocks& blocks, C scale,
                                           TokenPositions positions) {
  shardplan::causal_softmax_forward(scores, blocks, scale, positions);
}
template <class T>
void CpuKernels<T>::causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks,
                                            T* grads, const ScoreBlocks& grad_blocks, C scale,
                                            TokenPositions positions) {
  shardplan::causal_softmax_backward(probs, probs_blocks, grads, grad_blocks, scale, positions);
}
template <class T>
void CpuKernels<T>::embedding_rows(const int32_t* tokens, int64_t count, const T* table,
                                   ElementRange rows, int64_t hidden, T* out) {
  shardplan::embedding_rows(tokens, count, table, rows, hidden, out);
}
template <class T>
void CpuKernels<T>::embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                                            ElementRange rows, int64_t hidden, T* dtable) {
  shardplan::embedding_rows_backward(tokens, count, dout, rows, hidden, dtable);
}
template <class T>
void CpuKernels<T>::position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                                           TokenPositions positions, int64_t first_row) {
  shardplan::position_embedding_add(out, rows, hidden, wpe, positions, first_row);
}
template <class T>
void CpuKernels<T>::position_embedding_backward(const T* dout, int64_t rows, int64_t hidden,
                                                T* dwpe, TokenPositions positions,
                                                int64_t first_row) {
  shardplan::position_embedding_backward(dout, rows, hidden, dwpe, positions, first_row);
}
template <class T>
void CpuKernels<T>::logits_row_max(const C* logits, int64_t rows, int64_t cols, C* row_max) {
  shardplan::logits_row_max(logits, rows, cols, row_max);
}
template <class T>
void CpuKernels<T>::logits_target(const C* logits, const int32_t* targets, int64_t rows,
                                  int64_t cols, ElementRange vocab, C* target_logit) {
  shardplan::logits_target(logits, targets, rows, cols, vocab, target_logit);
}
template <class T>
void CpuKernels<T>::logits_exponentiate(C* logits, int64_t rows, int64_t cols, const C* row_max,
                                        C* sum_exp) {
  shardplan::logits_exponentiate(logits, rows, cols, row_max, sum_exp);
}
template <class T>
double CpuKernels<T>::token_loss_sum(const C* row_max, const C* sum_exp, const C* target_logit,
                                     int64_t rows) {
  return shardplan::token_loss_sum(row_max, sum_exp, target_logit, rows);
}
template <class T>
void CpuKernels<T>::logits_backward(C* exp_logits, const C* sum_exp, const int32_t* targets,
                                    int64_t rows, int64_t cols, ElementRange vocab, C scale) {
  shardplan::logits_backward(exp_logits, sum_exp, targets, rows, cols, vocab, scale);
}
template <class T>
void CpuKernels<T>::adam_update(const AdamConfig& config, float bias_correction1,
                                float bias_correction2, float* master, const T* grads, float* m,
                                float* v, T* params, int64_t count) {
  shardplan::adam_update(config, bias_correction1, bias_correction2, master, grads, m, v, params,
                         count);
}
template <class T>
void CpuKernels<T>::widen(const T* from, C* to, int64_t count) {
  std::copy(from, from + count, to);
}
template <class T>
void CpuKernels<T>::narrow(const C* from, T* to, int64_t count) {
  std::copy(from, from + count, to);
}

template <class T>
void CpuKernels<T>::fill(MatrixRef<T> m, T value) {
  for (int64_t r = 0; r < m.rows; ++r)
    std::fill(m.data + r * m.stride, m.data + r * m.stride + m.cols, value);
}
template <class T>
void CpuKernels<T>::copy(MatrixRef<T> to, MatrixRef<const T> from) {
  assert(to.rows == from.rows && to.cols == from.cols);
  for (int64_t r = 0; r < to.rows; ++r)
    std::copy(from.data + r * from.stride, from.data + r * from.stride + from.cols,
              to.data + r * to.stride);
}
template <class T>
void CpuKernels<T>::copy_to_host(void* host, const void* device, int64_t bytes) {
  if (bytes > 0) std::memcpy(host, device, static_cast<size_t>(bytes));
}
template <class T>
void CpuKernels<T>::copy_from_host(void* device, const void* host, int64_t bytes) {
  if (bytes > 0) std::memcpy(device, host, static_cast<size_t>(bytes));
}

template <class T>
CpuKernels<T>& cpu_kernels() {
  static CpuKernels<T> backend;
  return backend;
}

template class CpuKernels<float>;
template class CpuKernels<double>;
template class CpuKernels<bf16>;
template CpuKernels<float>& cpu_kernels<float>();
template CpuKernels<double>& cpu_kernels<double>();
template CpuKernels<bf16>& cpu_kernels<bf16>();

}  // namespace shardplan
