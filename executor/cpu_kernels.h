// The CPU backend: every primitive of kernels.h as the executor's host loops (linear.h, norm.h,
// activation.h, softmax.h, embedding_rows.h, cross_entropy.h, adam.h) and Eigen GEMMs (matmul.h),
// on host memory, finished when the call returns. Stateless: cpu_kernels<T>() is one shared
// instance, the default of every LayerContext.
#pragma once

#include "executor/kernels.h"

namespace shardplan {

template <class T>
class CpuKernels : public Kernels<T> {
 public:
  using C = compute_t<T>;
  using Kernels<T>::fill;
  using Kernels<T>::copy;

  void run_gemm_batched(MatrixRef<T> c, MatrixRef<const T> a, Op op_a, MatrixRef<const T> b,
                        Op op_b, Accumulate acc, const GemmBatch& batch,
                        MatmulStats* stats) override;
  int64_t attention_heads_per_call(int64_t) const override { return 1; }

  void bias_forward(T* y, const T* b, int64_t rows, int64_t cols) override;
  void residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) override;
  void bias_backward(const T* dy, int64_t rows, int64_t cols, T* db) override;
  void norm_forward(Norm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                    int64_t hidden, T* y) override;
  void norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                     int64_t hidden, T* dx, T* dweight, T* dbias) override;
  void activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn, T* a) override;
  void activation_backward(Activation kind, const T* u, const T* da, int64_t rows, int64_t ffn,
                           T* du) override;
  void causal_softmax_forward(T* scores, const ScoreBlocks& blocks, C scale,
                              TokenPositions positions) override;
  void causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks, T* grads,
                               const ScoreBlocks& grad_blocks, C scale,
                               TokenPositions positions) override;
  void embedding_rows(const int32_t* tokens, int64_t count, const T* table, ElementRange rows,
                      int64_t hidden, T* out) override;
  void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                               ElementRange rows, int64_t hidden, T* dtable) override;
  void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                              TokenPositions positions, int64_t first_row) override;
  void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                   TokenPositions positions, int64_t first_row) override;
  void logits_row_max(const C* logits, int64_t rows, int64_t cols, C* row_max) override;
  void logits_target(const C* logits, const int32_t* targets, int64_t rows, int64_t cols,
                     ElementRange vocab, C* target_logit) override;
  void logits_exponentiate(C* logits, int64_t rows, int64_t cols, const C* row_max,
                           C* sum_exp) override;
  double token_loss_sum(const C* row_max, const C* sum_exp, const C* target_logit,
                        int64_t rows) override;
  void logits_backward(C* exp_logits, const C* sum_exp, const int32_t* targets, int64_t rows,
                       int64_t cols, ElementRange vocab, C scale) override;
  void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                   float* master, const T* grads, float* m, float* v, T* params,
                   int64_t count) override;
  void widen(const T* from, C* to, int64_t count) override;
  void narrow(const C* from, T* to, int64_t count) override;

  void fill(MatrixRef<T> m, T value) override;
  void copy(MatrixRef<T> to, MatrixRef<const T> from) override;
  void copy_to_host(void* host, const void* device, int64_t bytes) override;
  void copy_from_host(void* device, const void* host, int64_t bytes) override;
  void synchronize() override {}
};

// The shared instance (float: training; bf16: mixed-precision training; double: the gradient
// checks).
template <class T>
CpuKernels<T>& cpu_kernels();

}  // namespace shardplan
