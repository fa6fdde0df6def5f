// A fully connected layer y = x·Wᵀ + b over row-major activations, W stored [out, in] as PyTorch
// stores it, so a column-parallel shard of W is a block of its rows and a row-parallel one a block
// of its columns (Shoeybi et al. 2019, §3).
#pragma once

#include <cstdint>
#include <vector>

#include "executor/kernels.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

// Weight gradients a split backward leaves for its W pass (Qi et al. 2024 §2): each linear
// layer's dw += dyᵀ·x, holding x and dy from B until W, charged as activations. A caller that owns
// the buffer an operand lies in hands it over (Deferral); other operands are copied.
template <class T>
class DeferredWeightGrads {
 public:
  explicit DeferredWeightGrads(TensorAllocator& alloc) : alloc_(&alloc) {}
  // `x_owner` / `dy_owner`: the buffers x and dy lie in, taken when they are exactly them.
  void keep(Kernels<T>& dev, const char* name, Buffer<T>* x_owner, const T* x, Buffer<T>* dy_owner,
            const T* dy, int64_t n, int64_t in, int64_t out, T* dw);
  // Every kept gradient, in the order kept; frees the operands held for them.
  void run(Kernels<T>& dev, MatmulStats* stats);
  bool empty() const { return jobs_.empty(); }

 private:
  struct Job {
    const char* name;
    Buffer<T> x, dy;
    int64_t n, in, out;
    T* dw;
  };
  Buffer<T> take(Kernels<T>& dev, Buffer<T>* owner, const T* data, int64_t count, const char* what);
  TensorAllocator* alloc_;
  std::vector<Job> jobs_;
};

// Where linear_backward leaves the weight gradient: nowhere (it computes it), or `to`, taking the
// buffers x and dy lie in where the caller names them.
template <class T>
struct Deferral {
  DeferredWeightGrads<T>* to = nullptr;
  Buffer<T>* x = nullptr;
  Buffer<T>* dy = nullptr;
};

// y[n, out] = x[n, in]·w[out, in]ᵀ (+ b[out] when b is not null), on `dev`; `name` names the layer
// where its GEMM is recorded ("fc1": gemm_call.h).
template <class T>
void linear_forward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* b,
                    int64_t n, int64_t in, int64_t out, T* y, MatmulStats* stats);

// dx[n, in] = dy·w (overwritten); dw += dyᵀ·x, or kept for a later W (`defer`); db += Σ_rows dy
// (when db is not null), on `dev`.
template <class T>
void linear_backward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* dy,
                     int64_t n, int64_t in, int64_t out, T* dx, T* dw, T* db, MatmulStats* stats,
                     Deferral<T> defer = {});

// The CPU backend's kernels (host loops; cpu_kernels.h):

// y[rows, cols] += b[cols] on every row: the bias add after a GEMM.
template <class T>
void bias_forward(T* y, const T* b, int64_t rows, int64_t cols);

// y += x + bias (bias may be null) over rows × cols: the residual add closing a block, which takes
// the bias of the row-parallel layer before it (added once, after the partial sums are reduced).
template <class T>
void residual_add(T* y, const T* x, const T* bias, int64_t rows, int64_t cols);

// db[cols] += Σ_rows dy[rows, cols]: the gradient of a bias added to every row.
template <class T>
void bias_backward(const T* dy, int64_t rows, int64_t cols, T* db);

}  // namespace shardplan
