// The primitives a rank's layers and interpreter run on the rank's device: GEMMs (batched for
// attention's heads), the layers' element-wise and row-wise kernels, Adam's update, fills and
// copies on the device and to and from the host. The layers (linear, attention, block, embedding,
// lm_head,
// ...) and the interpreter are written once against this interface; CpuKernels (cpu_kernels.h)
// runs each primitive as the executor's host loops and Eigen GEMMs, CudaKernels
// (cuda/cuda_kernels.h) as CUDA kernels and cuBLAS calls.
//
// Pointers are the device's: host memory for the CPU, GPU memory for CUDA (the rank's
// TensorAllocator hands out the one or the other); only copy_to_host and copy_from_host cross.
// On a GPU the calls are asynchronous, in order on the stream the rank's interpreter selected;
// copy_to_host, token_loss_sum and synchronize wait for them.
//
// T is the storage type of weights, activations and gradients: float (fp32 training), bf16 (mixed
// precision) or double (the gradient checks). Every kernel computes in C = compute_t<T> (fp32 for
// bf16: bf16.h) and rounds once when it stores; GEMMs accumulate in fp32 as cuBLAS's
// CUBLAS_COMPUTE_32F does. The cross-entropy kernels work on the fp32 copy of the logits
// (Megatron-LM casts the logits to fp32 before its vocab-parallel cross-entropy), Adam on fp32
// master weights and moments.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"
#include "executor/bf16.h"
#include "executor/layers/gemm_call.h"
#include "executor/layers/matmul.h"
#include "executor/state/adam_config.h"
#include "executor/state/param_layout.h"
#include "executor/token_positions.h"

namespace shardplan {

// A row-major matrix in device memory: rows × cols, consecutive rows `stride` elements apart.
template <class T>
struct MatrixRef {
  T* data = nullptr;
  int64_t rows = 0, cols = 0, stride = 0;

  operator MatrixRef<const T>() const { return {data, rows, cols, stride}; }
};
// rows × cols at p, rows `stride` apart (default: packed).
template <class T>
MatrixRef<T> matrix(T* p, int64_t rows, int64_t cols, int64_t stride = -1) {
  return {p, rows, cols, stride < 0 ? cols : stride};
}

// `count` GEMMs of one shape, the i-th on each operand's matrix at data + i·stride (cuBLAS's
// strided batch; the matrices of C must not overlap).
struct GemmBatch {
  int64_t count = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Attention's score matrices: `count` blocks `stride` elements apart, each rows × cols (queries ×
// keys, packed); query row i sees keys 0..positions.of(i), the causal mask by position in the
// whole sequence.
struct ScoreBlocks {
  int64_t count = 1, stride = 0, rows = 0, cols = 0;
};

// One GEMM of a batch as a layer made it at `site`.
template <class T>
GemmCall gemm_call(const GemmSite& site, MatrixRef<const T> c, MatrixRef<const T> a, Op op_a,
                   MatrixRef<const T> b, Op op_b, Accumulate acc, const GemmBatch& batch) {
  const auto stride = [](MatrixRef<const T> x) { return x.stride == x.cols ? 0 : x.stride; };
  return {.m = c.rows,
          .n = c.cols,
          .k = op_a == Op::none ? a.cols : a.rows,
          .op_a = op_a,
          .op_b = op_b,
          .acc = acc,
          .what = std::string(site.name) + " " + site.call,
          .cold_a = site.cold_a,
          .cold_b = site.cold_b,
          .cold_c = site.cold_c,
          .stride_a = stride(a),
          .stride_b = stride(b),
          .stride_c = stride(c),
          .batch = batch.count,
          .batch_stride_a = batch.count > 1 ? batch.stride_a : 0,
          .batch_stride_b = batch.count > 1 ? batch.stride_b : 0,
          .batch_stride_c = batch.count > 1 ? batch.stride_c : 0};
}

template <class T>
class Kernels {
 public:
  using C = compute_t<T>;
  virtual ~Kernels() = default;

  // The device's GEMMs, as matmul.h's gemm: c = op(a)·op(b), or c += op(a)·op(b); FLOPs into
  // `stats`. What calibration and the benchmarks time.
  virtual void run_gemm_batched(MatrixRef<T> c, MatrixRef<const T> a, Op op_a, MatrixRef<const T> b,
                                Op op_b, Accumulate acc, const GemmBatch& batch,
                                MatmulStats* stats) = 0;
  // A layer's GEMMs: the device's, each also appended to stats->calls when that is set, as `site`
  // names it (gemm_call.h). Recorded here, whatever the device, so that a recording sees exactly
  // the calls the layers make.
  void gemm_batched(const GemmSite& site, MatrixRef<T> c, MatrixRef<const T> a, Op op_a,
                    MatrixRef<const T> b, Op op_b, Accumulate acc, const GemmBatch& batch,
                    MatmulStats* stats) {
    if (stats != nullptr && stats->calls != nullptr)
      for (int64_t i = 0; i < batch.count; ++i)
        stats->calls->push_back(gemm_call<T>(site, c, a, op_a, b, op_b, acc, batch));
    run_gemm_batched(c, a, op_a, b, op_b, acc, batch, stats);
  }
  void gemm(const GemmSite& site, MatrixRef<T> c, MatrixRef<const T> a, Op op_a,
            MatrixRef<const T> b, Op op_b, Accumulate acc, MatmulStats* stats) {
    gemm_batched(site, c, a, op_a, b, op_b, acc, GemmBatch{}, stats);
  }
  // How many of `heads` attention heads one batched GEMM and softmax call takes: one on a CPU core,
  // which then keeps a head's score block in cache from its GEMM to its softmax; all of them on a
  // GPU, which needs the parallelism.
  virtual int64_t attention_heads_per_call(int64_t heads) const = 0;

  // The layers' kernels; each CPU version's header says what it computes.
  // linear.h
  virtual void bias_forward(T* y, const T* b, int64_t rows, int64_t cols) = 0;
  virtual void residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols) = 0;
  virtual void bias_backward(const T* dy, int64_t rows, int64_t cols, T* db) = 0;
  // norm.h
  virtual void norm_forward(Norm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                            int64_t hidden, T* y) = 0;
  virtual void norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                             int64_t hidden, T* dx, T* dweight, T* dbias) = 0;
  // activation.h
  virtual void activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn, T* a) = 0;
  virtual void activation_backward(Activation kind, const T* u, const T* da, int64_t rows,
                                   int64_t ffn, T* du) = 0;
  // softmax.h
  virtual void causal_softmax_forward(T* scores, const ScoreBlocks& blocks, C scale,
                                      TokenPositions positions) = 0;
  virtual void causal_softmax_backward(const T* probs, const ScoreBlocks& probs_blocks, T* grads,
                                       const ScoreBlocks& grad_blocks, C scale,
                                       TokenPositions positions) = 0;
  // embedding_rows.h
  virtual void embedding_rows(const int32_t* tokens, int64_t count, const T* table,
                              ElementRange rows, int64_t hidden, T* out) = 0;
  virtual void embedding_rows_backward(const int32_t* tokens, int64_t count, const T* dout,
                                       ElementRange rows, int64_t hidden, T* dtable) = 0;
  virtual void position_embedding_add(T* out, int64_t rows, int64_t hidden, const T* wpe,
                                      TokenPositions positions, int64_t first_row) = 0;
  virtual void position_embedding_backward(const T* dout, int64_t rows, int64_t hidden, T* dwpe,
                                           TokenPositions positions, int64_t first_row) = 0;
  // cross_entropy.h, on the logits in C
  virtual void logits_row_max(const C* logits, int64_t rows, int64_t cols, C* row_max) = 0;
  virtual void logits_target(const C* logits, const int32_t* targets, int64_t rows, int64_t cols,
                             ElementRange vocab, C* target_logit) = 0;
  virtual void logits_exponentiate(C* logits, int64_t rows, int64_t cols, const C* row_max,
                                   C* sum_exp) = 0;
  virtual double token_loss_sum(const C* row_max, const C* sum_exp, const C* target_logit,
                                int64_t rows) = 0;
  virtual void logits_backward(C* exp_logits, const C* sum_exp, const int32_t* targets,
                               int64_t rows, int64_t cols, ElementRange vocab, C scale) = 0;
  // adam.h: one update of `count` fp32 weights `master` from gradients in T;
  // bias_correction1/2 = 1 − β1^t, 1 − β2^t. Under mixed precision `params` receives the updated
  // weights rounded to T (the compute copy); null when `master` is the parameters themselves.
  virtual void adam_update(const AdamConfig& config, float bias_correction1, float bias_correction2,
                           float* master, const T* grads, float* m, float* v, T* params,
                           int64_t count) = 0;
  // Conversions between storage and compute precision, element by element (copies when T is C).
  virtual void widen(const T* from, C* to, int64_t count) = 0;
  virtual void narrow(const C* from, T* to, int64_t count) = 0;

  // Memory on the device.
  virtual void fill(MatrixRef<T> m, T value) = 0;
  virtual void copy(MatrixRef<T> to, MatrixRef<const T> from) = 0;  // same rows and cols
  void fill(T* p, int64_t count, T value) { fill(matrix(p, 1, count), value); }
  void copy(T* to, const T* from, int64_t count) {
    copy(matrix(to, 1, count), matrix(from, 1, count));
  }
  // Between the device and host memory; copy_to_host returns once the bytes are on the host.
  virtual void copy_to_host(void* host, const void* device, int64_t bytes) = 0;
  virtual void copy_from_host(void* device, const void* host, int64_t bytes) = 0;
  // Returns once every call made so far has finished.
  virtual void synchronize() = 0;
};

}  // namespace shardplan
