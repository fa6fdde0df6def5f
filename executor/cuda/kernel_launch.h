// The CUDA kernels' launchers, each running one kernel of kernels.h on `stream` for fp32 data (the
// kernels are in the *.cu files beside this header; CudaKernels calls them). Plain C++: no CUDA
// syntax here, and no header heavier than the kernels need, so nvcc compiles little.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "executor/adam_config.h"
#include "executor/token_positions.h"

namespace shardplan::cuda {

// core/model.h's Norm and Activation, restated so the kernel files need not include the model
// (nlohmann::json) through nvcc.
enum class RowNorm { layernorm, rmsnorm };
enum class Gating { gelu, swiglu };

// elementwise_kernels.cu
void launch_fill(float* p, int64_t rows, int64_t cols, int64_t stride, float value,
                 cudaStream_t stream);
void launch_bias_forward(float* y, const float* b, int64_t rows, int64_t cols, cudaStream_t stream);
void launch_residual_add(float* y, const float* x, const float* bias, int64_t rows, int64_t cols,
                         cudaStream_t stream);
void launch_activation_forward(Gating kind, const float* u, int64_t rows, int64_t ffn, float* a,
                               cudaStream_t stream);
void launch_activation_backward(Gating kind, const float* u, const float* da, int64_t rows,
                                int64_t ffn, float* du, cudaStream_t stream);
void launch_embedding_rows(const int32_t* tokens, int64_t count, const float* table,
                           int64_t row_begin, int64_t row_end, int64_t hidden, float* out,
                           cudaStream_t stream);
void launch_position_embedding_add(float* out, int64_t rows, int64_t hidden, const float* wpe,
                                   TokenPositions positions, int64_t first_row,
                                   cudaStream_t stream);
void launch_logits_backward(float* exp_logits, const float* sum_exp, const int32_t* targets,
                            int64_t rows, int64_t cols, int64_t vocab_begin, float scale,
                            cudaStream_t stream);
void launch_adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                        float* params, const float* grads, float* m, float* v, int64_t count,
                        cudaStream_t stream);

// reduction_kernels.cu: sums down columns (one thread per column, rows in order: deterministic)
// and per-row statistics.
void launch_bias_backward(const float* dy, int64_t rows, int64_t cols, float* db,
                          cudaStream_t stream);
void launch_embedding_rows_backward(const int32_t* tokens, int64_t count, const float* dout,
                                    int64_t row_begin, int64_t row_end, int64_t hidden,
                                    float* dtable, cudaStream_t stream);
void launch_position_embedding_backward(const float* dout, int64_t rows, int64_t hidden,
                                        float* dwpe, TokenPositions positions, int64_t first_row,
                                        cudaStream_t stream);
void launch_norm_forward(RowNorm kind, const float* x, const float* weight, const float* bias,
                         int64_t rows, int64_t hidden, float eps, float* y, cudaStream_t stream);
// `row_stats` holds 2·rows floats of scratch (each row's mean and 1/σ).
void launch_norm_backward(RowNorm kind, const float* x, const float* weight, const float* dy,
                          int64_t rows, int64_t hidden, float eps, float* dx, float* dweight,
                          float* dbias, float* row_stats, cudaStream_t stream);
void launch_logits_row_max(const float* logits, int64_t rows, int64_t cols, float* row_max,
                           cudaStream_t stream);
void launch_logits_target(const float* logits, const int32_t* targets, int64_t rows, int64_t cols,
                          int64_t vocab_begin, int64_t vocab_end, float* target_logit,
                          cudaStream_t stream);
void launch_logits_exponentiate(float* logits, int64_t rows, int64_t cols, const float* row_max,
                                float* sum_exp, cudaStream_t stream);
// *total (one double in device memory) = Σ_r loss of row r.
void launch_token_loss_sum(const float* row_max, const float* sum_exp, const float* target_logit,
                           int64_t rows, double* total, cudaStream_t stream);

// softmax_kernels.cu: attention's causal softmax, one block per score row.
void launch_causal_softmax_forward(float* scores, int64_t count, int64_t stride, int64_t rows,
                                   int64_t cols, float scale, TokenPositions positions,
                                   cudaStream_t stream);
void launch_causal_softmax_backward(const float* probs, int64_t probs_stride, float* grads,
                                    int64_t grads_stride, int64_t count, int64_t rows, int64_t cols,
                                    float scale, TokenPositions positions, cudaStream_t stream);

}  // namespace shardplan::cuda
