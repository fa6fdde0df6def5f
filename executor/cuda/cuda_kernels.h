// The CUDA backend's Kernels (executor/kernels.h) for fp32: GEMMs through cuBLAS (row-major
// operands handed to column-major cuBLAS as their transposes), the layers' kernels from the *.cu
// files beside this one, copies through cudaMemcpy2DAsync; all on the context's current stream.
// Scratch (the norms' row statistics, the loss sum) comes from the rank's allocator as buffers.
#pragma once

#include "executor/cuda/cuda_context.h"
#include "executor/kernels.h"
#include "executor/tensor_allocator.h"

namespace shardplan {

class CudaKernels final : public Kernels<float> {
 public:
  using Kernels<float>::fill;
  using Kernels<float>::copy;

  CudaKernels(CudaContext& ctx, TensorAllocator& alloc) : ctx_(ctx), alloc_(alloc) {}

  void gemm_batched(MatrixRef<float> c, MatrixRef<const float> a, Op op_a, MatrixRef<const float> b,
                    Op op_b, Accumulate acc, const GemmBatch& batch, MatmulStats* stats) override;
  int64_t attention_heads_per_call(int64_t heads) const override { return heads; }

  void bias_forward(float* y, const float* b, int64_t rows, int64_t cols) override;
  void residual_add(float* y, const float* x, const float* bias, int64_t rows,
                    int64_t cols) override;
  void bias_backward(const float* dy, int64_t rows, int64_t cols, float* db) override;
  void norm_forward(Norm kind, const float* x, const float* weight, const float* bias, int64_t rows,
                    int64_t hidden, float* y) override;
  void norm_backward(Norm kind, const float* x, const float* weight, const float* dy, int64_t rows,
                     int64_t hidden, float* dx, float* dweight, float* dbias) override;
  void activation_forward(Activation kind, const float* u, int64_t rows, int64_t ffn,
                          float* a) override;
  void activation_backward(Activation kind, const float* u, const float* da, int64_t rows,
                           int64_t ffn, float* du) override;
  void causal_softmax_forward(float* scores, const ScoreBlocks& blocks, float scale,
                              TokenPositions positions) override;
  void causal_softmax_backward(const float* probs, const ScoreBlocks& probs_blocks, float* grads,
                               const ScoreBlocks& grad_blocks, float scale,
                               TokenPositions positions) override;
  void embedding_rows(const int32_t* tokens, int64_t count, const float* table, ElementRange rows,
                      int64_t hidden, float* out) override;
  void embedding_rows_backward(const int32_t* tokens, int64_t count, const float* dout,
                               ElementRange rows, int64_t hidden, float* dtable) override;
  void position_embedding_add(float* out, int64_t rows, int64_t hidden, const float* wpe,
                              TokenPositions positions, int64_t first_row) override;
  void position_embedding_backward(const float* dout, int64_t rows, int64_t hidden, float* dwpe,
                                   TokenPositions positions, int64_t first_row) override;
  void logits_row_max(const float* logits, int64_t rows, int64_t cols, float* row_max) override;
  void logits_target(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                     ElementRange vocab, float* target_logit) override;
  void logits_exponentiate(float* logits, int64_t rows, int64_t cols, const float* row_max,
                           float* sum_exp) override;
  double token_loss_sum(const float* row_max, const float* sum_exp, const float* target_logit,
                        int64_t rows) override;
  void logits_backward(float* exp_logits, const float* sum_exp, const int32_t* targets,
                       int64_t rows, int64_t cols, ElementRange vocab, float scale) override;
  void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                   float* params, const float* grads, float* m, float* v, int64_t count) override;

  void fill(MatrixRef<float> m, float value) override;
  void copy(MatrixRef<float> to, MatrixRef<const float> from) override;
  void copy_to_host(void* host, const void* device, int64_t bytes) override;
  void copy_from_host(void* device, const void* host, int64_t bytes) override;
  void synchronize() override;

 private:
  CudaContext& ctx_;
  TensorAllocator& alloc_;
};

}  // namespace shardplan
