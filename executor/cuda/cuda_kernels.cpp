#include "executor/cuda/cuda_kernels.h"

#include <cassert>
#include <climits>

#include "core/error.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/kernel_launch.h"
#include "executor/norm.h"

namespace shardplan {

namespace {

cublasOperation_t cublas_op(Op op) {
  return op == Op::none ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// cuBLAS takes int dimensions and leading dimensions.
int as_int(int64_t n) {
  assert(n >= 0 && n <= INT_MAX);
  return static_cast<int>(n);
}

cuda::RowNorm row_norm(Norm kind) {
  return kind == Norm::layernorm ? cuda::RowNorm::layernorm : cuda::RowNorm::rmsnorm;
}

cuda::Gating gating(Activation kind) {
  return kind == Activation::gelu ? cuda::Gating::gelu : cuda::Gating::swiglu;
}

}  // namespace

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a row-major matrix with row
// stride ld is the column-major transpose with leading dimension ld: so cuBLAS computes Cᵀ from
// B and A as stored, with the same ops (cuBLAS documentation, "cublas<t>gemm()").
void CudaKernels::gemm_batched(MatrixRef<float> c, MatrixRef<const float> a, Op op_a,
                               MatrixRef<const float> b, Op op_b, Accumulate acc,
                               const GemmBatch& batch, MatmulStats* stats) {
  const int64_t m = op_a == Op::none ? a.rows : a.cols;
  const int64_t k = op_a == Op::none ? a.cols : a.rows;
  const int64_t n = op_b == Op::none ? b.cols : b.rows;
  assert(c.rows == m && c.cols == n && (op_b == Op::none ? b.rows : b.cols) == k);
  if (batch.count == 0 || m * n == 0) return;
  const float alpha = 1.0f, beta = acc == Accumulate::add ? 1.0f : 0.0f;
  cublasHandle_t h = ctx_.cublas();
  SHARDPLAN_CUBLAS_CHECK(cublasSetStream(h, ctx_.stream()));
  if (batch.count == 1)
    SHARDPLAN_CUBLAS_CHECK(cublasSgemm(h, cublas_op(op_b), cublas_op(op_a), as_int(n), as_int(m),
                                       as_int(k), &alpha, b.data, as_int(b.stride), a.data,
                                       as_int(a.stride), &beta, c.data, as_int(c.stride)));
  else
    SHARDPLAN_CUBLAS_CHECK(cublasSgemmStridedBatched(
        h, cublas_op(op_b), cublas_op(op_a), as_int(n), as_int(m), as_int(k), &alpha, b.data,
        as_int(b.stride), batch.stride_b, a.data, as_int(a.stride), batch.stride_a, &beta, c.data,
        as_int(c.stride), batch.stride_c, as_int(batch.count)));
  // FLOPs only: a GPU's time is its events' (the interpreter times actions, not GEMMs).
  if (stats != nullptr)
    stats->flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                    static_cast<double>(batch.count);
}

void CudaKernels::bias_forward(float* y, const float* b, int64_t rows, int64_t cols) {
  cuda::launch_bias_forward(y, b, rows, cols, ctx_.stream());
}
void CudaKernels::residual_add(float* y, const float* x, const float* bias, int64_t rows,
                               int64_t cols) {
  cuda::launch_residual_add(y, x, bias, rows, cols, ctx_.stream());
}
void CudaKernels::bias_backward(const float* dy, int64_t rows, int64_t cols, float* db) {
  cuda::launch_bias_backward(dy, rows, cols, db, ctx_.stream());
}
void CudaKernels::norm_forward(Norm kind, const float* x, const float* weight, const float* bias,
                               int64_t rows, int64_t hidden, float* y) {
  cuda::launch_norm_forward(row_norm(kind), x, weight, bias, rows, hidden,
                            static_cast<float>(kNormEps), y, ctx_.stream());
}
void CudaKernels::norm_backward(Norm kind, const float* x, const float* weight, const float* dy,
                                int64_t rows, int64_t hidden, float* dx, float* dweight,
                                float* dbias) {
  Buffer<float> stats =
      alloc_.allocate<float>(MemoryCategory::buffers, 2 * rows, "norm row statistics");
  cuda::launch_norm_backward(row_norm(kind), x, weight, dy, rows, hidden,
                             static_cast<float>(kNormEps), dx, dweight, dbias, stats.data(),
                             ctx_.stream());
}
void CudaKernels::activation_forward(Activation kind, const float* u, int64_t rows, int64_t ffn,
                                     float* a) {
  cuda::launch_activation_forward(gating(kind), u, rows, ffn, a, ctx_.stream());
}
void CudaKernels::activation_backward(Activation kind, const float* u, const float* da,
                                      int64_t rows, int64_t ffn, float* du) {
  cuda::launch_activation_backward(gating(kind), u, da, rows, ffn, du, ctx_.stream());
}
void CudaKernels::causal_softmax_forward(float* scores, const ScoreBlocks& blocks, float scale,
                                         TokenPositions positions) {
  cuda::launch_causal_softmax_forward(scores, blocks.count, blocks.stride, blocks.rows, blocks.cols,
                                      scale, positions, ctx_.stream());
}
void CudaKernels::causal_softmax_backward(const float* probs, const ScoreBlocks& probs_blocks,
                                          float* grads, const ScoreBlocks& grad_blocks, float scale,
                                          TokenPositions positions) {
  cuda::launch_causal_softmax_backward(probs, probs_blocks.stride, grads, grad_blocks.stride,
                                       grad_blocks.count, grad_blocks.rows, grad_blocks.cols, scale,
                                       positions, ctx_.stream());
}
void CudaKernels::embedding_rows(const int32_t* tokens, int64_t count, const float* table,
                                 ElementRange rows, int64_t hidden, float* out) {
  cuda::launch_embedding_rows(tokens, count, table, rows.begin, rows.end, hidden, out,
                              ctx_.stream());
}
void CudaKernels::embedding_rows_backward(const int32_t* tokens, int64_t count, const float* dout,
                                          ElementRange rows, int64_t hidden, float* dtable) {
  cuda::launch_embedding_rows_backward(tokens, count, dout, rows.begin, rows.end, hidden, dtable,
                                       ctx_.stream());
}
void CudaKernels::position_embedding_add(float* out, int64_t rows, int64_t hidden, const float* wpe,
                                         TokenPositions positions, int64_t first_row) {
  cuda::launch_position_embedding_add(out, rows, hidden, wpe, positions, first_row, ctx_.stream());
}
void CudaKernels::position_embedding_backward(const float* dout, int64_t rows, int64_t hidden,
                                              float* dwpe, TokenPositions positions,
                                              int64_t first_row) {
  cuda::launch_position_embedding_backward(dout, rows, hidden, dwpe, positions, first_row,
                                           ctx_.stream());
}
void CudaKernels::logits_row_max(const float* logits, int64_t rows, int64_t cols, float* row_max) {
  cuda::launch_logits_row_max(logits, rows, cols, row_max, ctx_.stream());
}
void CudaKernels::logits_target(const float* logits, const int32_t* targets, int64_t rows,
                                int64_t cols, ElementRange vocab, float* target_logit) {
  cuda::launch_logits_target(logits, targets, rows, cols, vocab.begin, vocab.end, target_logit,
                             ctx_.stream());
}
void CudaKernels::logits_exponentiate(float* logits, int64_t rows, int64_t cols,
                                      const float* row_max, float* sum_exp) {
  cuda::launch_logits_exponentiate(logits, rows, cols, row_max, sum_exp, ctx_.stream());
}
double CudaKernels::token_loss_sum(const float* row_max, const float* sum_exp,
                                   const float* target_logit, int64_t rows) {
  Buffer<double> total = alloc_.allocate<double>(MemoryCategory::buffers, 1, "loss sum");
  cuda::launch_token_loss_sum(row_max, sum_exp, target_logit, rows, total.data(), ctx_.stream());
  double host = 0;
  copy_to_host(&host, total.data(), sizeof(double));
  return host;
}
void CudaKernels::logits_backward(float* exp_logits, const float* sum_exp, const int32_t* targets,
                                  int64_t rows, int64_t cols, ElementRange vocab, float scale) {
  cuda::launch_logits_backward(exp_logits, sum_exp, targets, rows, cols, vocab.begin, scale,
                               ctx_.stream());
}
void CudaKernels::adam_update(const AdamConfig& config, float bias_correction1,
                              float bias_correction2, float* params, const float* grads, float* m,
                              float* v, int64_t count) {
  cuda::launch_adam_update(config, bias_correction1, bias_correction2, params, grads, m, v, count,
                           ctx_.stream());
}

void CudaKernels::fill(MatrixRef<float> m, float value) {
  if (value == 0.0f && m.stride == m.cols) {
    SHARDPLAN_CUDA_CHECK(cudaMemsetAsync(
        m.data, 0, static_cast<size_t>(m.rows * m.cols) * sizeof(float), ctx_.stream()));
    return;
  }
  cuda::launch_fill(m.data, m.rows, m.cols, m.stride, value, ctx_.stream());
}
void CudaKernels::copy(MatrixRef<float> to, MatrixRef<const float> from) {
  assert(to.rows == from.rows && to.cols == from.cols);
  if (to.rows * to.cols == 0) return;
  constexpr size_t f = sizeof(float);
  SHARDPLAN_CUDA_CHECK(
      cudaMemcpy2DAsync(to.data, static_cast<size_t>(to.stride) * f, from.data,
                        static_cast<size_t>(from.stride) * f, static_cast<size_t>(to.cols) * f,
                        static_cast<size_t>(to.rows), cudaMemcpyDeviceToDevice, ctx_.stream()));
}
void CudaKernels::copy_to_host(void* host, const void* device, int64_t bytes) {
  if (bytes == 0) return;
  SHARDPLAN_CUDA_CHECK(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes),
                                       cudaMemcpyDeviceToHost, ctx_.stream()));
  SHARDPLAN_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
}
void CudaKernels::copy_from_host(void* device, const void* host, int64_t bytes) {
  if (bytes == 0) return;
  // From pageable host memory the call returns once the bytes are staged: the host buffer may be
  // reused at once (CUDA Runtime API, "API synchronization behavior", memcpy, asynchronous).
  SHARDPLAN_CUDA_CHECK(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes),
                                       cudaMemcpyHostToDevice, ctx_.stream()));
}
void CudaKernels::synchronize() {
  SHARDPLAN_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
}

}  // namespace shardplan
