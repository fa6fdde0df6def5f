// The CUDA kernels' launchers, each running one kernel of kernels.h on `stream` (the kernels are in
// the *.cu files beside this header; CudaKernels calls them). T is the storage type, float or bf16,
// instantiated for both in the .cu files: a kernel loads T, computes in fp32 and stores rounded to
// T through bf16.h's conversion, the one the CPU backend runs. The cross-entropy works on the fp32
// copy of the logits, Adam on fp32 master weights and moments. Plain C++: no CUDA syntax here, and
// no header heavier than the kernels need, so nvcc compiles little.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "executor/bf16.h"
#include "executor/state/adam_config.h"
#include "executor/token_positions.h"

namespace shardplan::cuda {

// core/model.h's Norm and Activation, restated so the kernel files need not include the model
// (nlohmann::json) through nvcc.
enum class RowNorm { layernorm, rmsnorm };
enum class Gating { gelu, swiglu };

// elementwise_kernels.cu
template <class T>
void launch_fill(T* p, int64_t rows, int64_t cols, int64_t stride, T value, cudaStream_t stream);
template <class T>
void launch_bias_forward(T* y, const T* b, int64_t rows, int64_t cols, cudaStream_t stream);
template <class T>
void launch_residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols,
                         cudaStream_t stream);
template <class T>
void launch_activation_forward(Gating kind, const T* u, int64_t rows, int64_t ffn, T* a,
                               cudaStream_t stream);
template <class T>
void launch_activation_backward(Gating kind, const T* u, const T* da, int64_t rows, int64_t ffn,
                                T* du, cudaStream_t stream);
template <class T>
void launch_embedding_rows(const int32_t* tokens, int64_t count, const T* table, int64_t row_begin,
                           int64_t row_end, int64_t hidden, T* out, cudaStream_t stream);
template <class T>
void launch_position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                                   TokenPositions positions, int64_t first_row,
                                   cudaStream_t stream);
void launch_logits_backward(float* exp_logits, const float* sum_exp, const int32_t* targets,
                            int64_t rows, int64_t cols, int64_t vocab_begin, float scale,
                            cudaStream_t stream);
// `master` updated from `grads`; when `params` is not null, each updated weight rounded into it.
template <class T>
void launch_adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                        float* master, const T* grads, float* m, float* v, T* params, int64_t count,
                        cudaStream_t stream);
// to[i] = from[i], converted (bf16 → float exactly, float → bf16 rounded).
template <class From, class To>
void launch_convert(const From* from, To* to, int64_t count, cudaStream_t stream);

// reduction_kernels.cu: sums down columns (rows in a fixed order: deterministic), each summed in
// fp32 and added to its output once; and per-row statistics, in fp32.
template <class T>
void launch_bias_backward(const T* dy, int64_t rows, int64_t cols, T* db, cudaStream_t stream);
template <class T>
void launch_position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                        TokenPositions positions, int64_t first_row,
                                        cudaStream_t stream);
template <class T>
void launch_norm_forward(RowNorm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                         int64_t hidden, float eps, T* y, cudaStream_t stream);
// `row_stats` holds 2·rows floats of scratch (each row's mean and 1/σ).
template <class T>
void launch_norm_backward(RowNorm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                          int64_t hidden, float eps, T* dx, T* dweight, T* dbias, float* row_stats,
                          cudaStream_t stream);
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

// embedding_backward.cu: the table's gradient rows, each token's row summed in fp32 in token
// order and added to the table once. `scratch` holds embedding_backward_scratch_bytes(count).
int64_t embedding_backward_scratch_bytes(int64_t count);
template <class T>
void launch_embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                                    int64_t row_begin, int64_t row_end, int64_t hidden, T* dtable,
                                    std::byte* scratch, cudaStream_t stream);

// softmax_kernels.cu: attention's causal softmax, one block per score row.
template <class T>
void launch_causal_softmax_forward(T* scores, int64_t count, int64_t stride, int64_t rows,
                                   int64_t cols, float scale, TokenPositions positions,
                                   cudaStream_t stream);
template <class T>
void launch_causal_softmax_backward(const T* probs, int64_t probs_stride, T* grads,
                                    int64_t grads_stride, int64_t count, int64_t rows, int64_t cols,
                                    float scale, TokenPositions positions, cudaStream_t stream);

}  // namespace shardplan::cuda
