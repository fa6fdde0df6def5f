#include "executor/cuda/cuda_kernels.h"

#include <cassert>
#include <climits>
#include <type_traits>

#include "core/error.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/kernel_launch.h"
#include "executor/layers/norm.h"
#include "executor/runtime/wait_scope.h"

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

// A GEMM as cuBLAS takes it, column-major: c = op(a)·op(b) (+ c when beta is 1), m × n by k, or
// `count` of them, each operand's `stride` elements after the last.
template <class T>
struct ColumnMajorGemm {
  cublasOperation_t op_a, op_b;
  int m, n, k;
  const T* a;
  int lda;
  long long stride_a;
  const T* b;
  int ldb;
  long long stride_b;
  T* c;
  int ldc;
  long long stride_c;
  int count;
};

// fp32: cublasSgemm, IEEE or TF32 as the handle's math mode says.
void run(cublasHandle_t h, const ColumnMajorGemm<float>& g, float beta) {
  const float alpha = 1.0f;
  if (g.count == 1)
    SHARDPLAN_CUBLAS_CHECK(cublasSgemm(h, g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a, g.lda, g.b,
                                       g.ldb, &beta, g.c, g.ldc));
  else
    SHARDPLAN_CUBLAS_CHECK(cublasSgemmStridedBatched(h, g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a,
                                                     g.lda, g.stride_a, g.b, g.ldb, g.stride_b,
                                                     &beta, g.c, g.ldc, g.stride_c, g.count));
}

// bf16: operands and output in bf16, products summed (and c added) in fp32 and each output rounded
// once (cuBLAS documentation, "cublasGemmEx()": CUDA_R_16BF with CUBLAS_COMPUTE_32F, alpha and beta
// fp32), on tensor cores as mixed-precision training runs its GEMMs.
void run(cublasHandle_t h, const ColumnMajorGemm<bf16>& g, float beta) {
  const float alpha = 1.0f;
  constexpr cudaDataType_t kBf16 = CUDA_R_16BF;
  if (g.count == 1)
    SHARDPLAN_CUBLAS_CHECK(cublasGemmEx(h, g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a, kBf16, g.lda,
                                        g.b, kBf16, g.ldb, &beta, g.c, kBf16, g.ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    SHARDPLAN_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, g.op_a, g.op_b, g.m, g.n, g.k, &alpha, g.a, kBf16, g.lda, g.stride_a, g.b, kBf16, g.ldb,
        g.stride_b, &beta, g.c, kBf16, g.ldc, g.stride_c, g.count, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT));
}

}  // namespace

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a row-major matrix with row
// stride ld is the column-major transpose with leading dimension ld: so cuBLAS computes Cᵀ from
// B and A as stored, with the same ops (cuBLAS documentation, "cublas<t>gemm()").
template <class T>
void CudaKernels<T>::run_gemm_batched(MatrixRef<T> c, MatrixRef<const T> a, Op op_a,
                                      MatrixRef<const T> b, Op op_b, Accumulate acc,
                                      const GemmBatch& batch, MatmulStats* stats) {
  const int64_t m = op_a == Op::none ? a.rows : a.cols;
  const int64_t k = op_a == Op::none ? a.cols : a.rows;
  const int64_t n = op_b == Op::none ? b.cols : b.rows;
  assert(c.rows == m && c.cols == n && (op_b == Op::none ? b.rows : b.cols) == k);
  if (batch.count == 0 || m * n == 0) return;
  cublasHandle_t h = ctx_.cublas();
  SHARDPLAN_CUBLAS_CHECK(cublasSetStream(h, ctx_.stream()));
  run(h,
      ColumnMajorGemm<T>{cublas_op(op_b), cublas_op(op_a), as_int(n), as_int(m), as_int(k), b.data,
                         as_int(b.stride), batch.stride_b, a.data, as_int(a.stride), batch.stride_a,
                         c.data, as_int(c.stride), batch.stride_c, as_int(batch.count)},
      acc == Accumulate::add ? 1.0f : 0.0f);
  // FLOPs only: a GPU's time is its events' (the interpreter times actions, not GEMMs).
  if (stats != nullptr)
    stats->flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
                    static_cast<double>(batch.count);
}

template <class T>
void CudaKernels<T>::bias_forward(T* y, const T* b, int64_t rows, int64_t cols) {
  cuda::launch_bias_forward(y, b, rows, cols, ctx_.stream());
}
template <class T>
void CudaKernels<T>::residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) {
  cuda::launch_residual_add(y, x, bias, rows, cols, ctx_.stream());
}
template <class T>
void CudaKernels<T>::bias_backward(const T* dy, int64_t rows, int64_t cols, T* db) {
  cuda::launch_bias_backward(dy, rows, cols, db, ctx_.stream());
}
template <class T>
void CudaKernels<T>::norm_forward(Norm kind, const T* x, const T* weight, const T* bias,
                                  int64_t rows, int64_t hidden, T* y) {
  cuda::launch_norm_forward(row_norm(kind), x, weight, bias, rows, hidden,
                            static_cast<float>(kNormEps), y, ctx_.stream());
}
template <class T>
void CudaKernels<T>::norm_backward(Norm kind, const T* x, const T* weight, const T* dy,
                                   int64_t rows, int64_t hidden, T* dx, T* dweight, T* dbias) {
  Buffer<float> stats =
      alloc_.allocate<float>(MemoryCategory::buffers, 2 * rows, "norm row statistics");
  cuda::launch_norm_backward(row_norm(kind), x, weight, dy, rows, hidden,
                             static_cast<float>(kNormEps), dx, dweight, dbias, stats.data(),
                             ctx_.stream());
}
template <class T>
void CudaKernels<T>::activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn,
                                        T* a) {
  cuda::launch_activation_forward(gating(kind), u, rows, ffn, a, ctx_.stream());
}
template <class T>
void CudaKernels<T>::activation_backward(Activation kind, const T* u, const T* da, int64_t rows,
                                         int64_t ffn, T* du) {
  cuda::launch_activation_backward(gating(kind), u, da, rows, ffn, du, ctx_.stream());
}
template <class T>
void CudaKernels<T>::causal_softmax_forward(T* scores, const ScoreBlocks& blocks, C scale,
                                            TokenPositions positions) {
  cuda::launch_causal_softmax_forward(scores, blocks.count, blocks.stride, blocks.rows, blocks.cols,
                                      scale, positions, ctx_.stream());
}
template <class T>
void CudaKernels<T>::causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks,
                                             T* grads, const ScoreBlocks& grad_blocks, C scale,
                                             TokenPositions positions) {
  cuda::launch_causal_softmax_backward(probs, probs_blocks.stride, grads, grad_blocks.stride,
                                       grad_blocks.count, grad_blocks.rows, grad_blocks.cols, scale,
                                       positions, ctx_.stream());
}
template <class T>
void CudaKernels<T>::embedding_rows(const int32_t* tokens, int64_t count, const T* table,
                                    ElementRange rows, int64_t hidden, T* out) {
  cuda::launch_embedding_rows(tokens, count, table, rows.begin, rows.end, hidden, out,
                              ctx_.stream());
}
template <class T>
void CudaKernels<T>::embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                                             ElementRange rows, int64_t hidden, T* dtable) {
  Buffer<std::byte> scratch = alloc_.allocate<std::byte>(
      MemoryCategory::buffers, cuda::embedding_backward_scratch_bytes(count),
      "embedding gradient sort");
  cuda::launch_embedding_rows_backward(tokens, count, dout, rows.begin, rows.end, hidden, dtable,
                                       scratch.data(), ctx_.stream());
}
template <class T>
void CudaKernels<T>::position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                                            TokenPositions positions, int64_t first_row) {
  cuda::launch_position_embedding_add(out, rows, hidden, wpe, positions, first_row, ctx_.stream());
}
template <class T>
void CudaKernels<T>::position_embedding_backward(const T* dout, int64_t rows, int64_t hidden,
                                                 T* dwpe, TokenPositions positions,
                                                 int64_t first_row) {
  cuda::launch_position_embedding_backward(dout, rows, hidden, dwpe, positions, first_row,
                                           ctx_.stream());
}
template <class T>
void CudaKernels<T>::logits_row_max(const C* logits, int64_t rows, int64_t cols, C* row_max) {
  cuda::launch_logits_row_max(logits, rows, cols, row_max, ctx_.stream());
}
template <class T>
void CudaKernels<T>::logits_target(const C* logits, const int32_t* targets, int64_t rows,
                                   int64_t cols, ElementRange vocab, C* target_logit) {
  cuda::launch_logits_target(logits, targets, rows, cols, vocab.begin, vocab.end, target_logit,
                             ctx_.stream());
}
template <class T>
void CudaKernels<T>::logits_exponentiate(C* logits, int64_t rows, int64_t cols, const C* row_max,
                                         C* sum_exp) {
  cuda::launch_logits_exponentiate(logits, rows, cols, row_max, sum_exp, ctx_.stream());
}
template <class T>
double CudaKernels<T>::token_loss_sum(const C* row_max, const C* sum_exp, const C* target_logit,
                                      int64_t rows) {
  Buffer<double> total = alloc_.allocate<double>(MemoryCategory::buffers, 1, "loss sum");
  cuda::launch_token_loss_sum(row_max, sum_exp, target_logit, rows, total.data(), ctx_.stream());
  double host = 0;
  copy_to_host(&host, total.data(), sizeof(double));
  return host;
}
template <class T>
void CudaKernels<T>::logits_backward(C* exp_logits, const C* sum_exp, const int32_t* targets,
                                     int64_t rows, int64_t cols, ElementRange vocab, C scale) {
  cuda::launch_logits_backward(exp_logits, sum_exp, targets, rows, cols, vocab.begin, scale,
                               ctx_.stream());
}
template <class T>
void CudaKernels<T>::adam_update(const AdamConfig& config, float bias_correction1,
                                 float bias_correction2, float* master, const T* grads, float* m,
                                 float* v, T* params, int64_t count) {
  cuda::launch_adam_update(config, bias_correction1, bias_correction2, master, grads, m, v, params,
                           count, ctx_.stream());
}
template <class T>
void CudaKernels<T>::widen(const T* from, C* to, int64_t count) {
  if constexpr (std::is_same_v<T, C>)
    copy(to, from, count);
  else
    cuda::launch_convert(from, to, count, ctx_.stream());
}
template <class T>
void CudaKernels<T>::narrow(const C* from, T* to, int64_t count) {
  if constexpr (std::is_same_v<T, C>)
    copy(to, from, count);
  else
    cuda::launch_convert(from, to, count, ctx_.stream());
}

template <class T>
void CudaKernels<T>::fill(MatrixRef<T> m, T value) {
  if (static_cast<float>(value) == 0.0f && m.stride == m.cols) {
    SHARDPLAN_CUDA_CHECK(cudaMemsetAsync(
        m.data, 0, static_cast<size_t>(m.rows * m.cols) * sizeof(T), ctx_.stream()));
    return;
  }
  cuda::launch_fill(m.data, m.rows, m.cols, m.stride, value, ctx_.stream());
}
template <class T>
void CudaKernels<T>::copy(MatrixRef<T> to, MatrixRef<const T> from) {
  assert(to.rows == from.rows && to.cols == from.cols);
  // widen and narrow of fp32 copy; in place they have nothing to do.
  if (to.rows * to.cols == 0 || (to.data == from.data && to.stride == from.stride)) return;
  constexpr size_t e = sizeof(T);
  SHARDPLAN_CUDA_CHECK(
      cudaMemcpy2DAsync(to.data, static_cast<size_t>(to.stride) * e, from.data,
                        static_cast<size_t>(from.stride) * e, static_cast<size_t>(to.cols) * e,
                        static_cast<size_t>(to.rows), cudaMemcpyDeviceToDevice, ctx_.stream()));
}
template <class T>
void CudaKernels<T>::copy_to_host(void* host, const void* device, int64_t bytes) {
  if (bytes == 0) return;
  SHARDPLAN_CUDA_CHECK(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes),
                                       cudaMemcpyDeviceToHost, ctx_.stream()));
  SHARDPLAN_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
}
template <class T>
void CudaKernels<T>::copy_from_host(void* device, const void* host, int64_t bytes) {
  if (bytes == 0) return;
  // From pageable host memory the call returns once the bytes are staged: the host buffer may be
  // reused at once (CUDA Runtime API, "API synchronization behavior", memcpy, asynchronous).
  SHARDPLAN_CUDA_CHECK(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes),
                                       cudaMemcpyHostToDevice, ctx_.stream()));
}
template <class T>
void CudaKernels<T>::synchronize() {
  const WaitScope wait({WaitKind::device, "device", {}, 0});
  SHARDPLAN_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
}

template class CudaKernels<float>;
template class CudaKernels<bf16>;

}  // namespace shardplan
