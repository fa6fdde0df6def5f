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
// layer's dw += dyᵀ·x, with copies of x and dy held from B until W (charged as activations: a
// micro-batch keeps them in place of the saved tensors B frees).
template <class T>
class DeferredWeightGrads {
 public:
  explicit DeferredWeightGrads(TensorAllocator& alloc) : alloc_(&alloc) {}
  void keep(Kernels<T>& dev, const char* name, const T* x, const T* dy, int64_t n, int64_t in,
            int64_t out, T* dw);
  // Every kept gradient, in the order kept; frees the copies.
  void run(Kernels<T>& dev, MatmulStats* stats);
  bool empty() const { return jobs_.empty(); }

 private:
  struct Job {
    const char* name;
    Buffer<T> x, dy;
    int64_t n, in, out;
    T* dw;
  };
  TensorAllocator* alloc_;
  std::vector<Job> jobs_;
};

// y[n, out] = x[n, in]·w[out, in]ᵀ (+ b[out] when b is not null), on `dev`; `name` names the layer
// where its GEMM is recorded ("fc1": gemm_call.h).
template <class T>
void linear_forward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* b,
                    int64_t n, int64_t in, int64_t out, T* y, MatmulStats* stats);

// dx[n, in] = dy·w (overwritten); dw += dyᵀ·x, or kept in `deferred` for a later W when it is
// not null; db += Σ_rows dy (when db is not null), on `dev`.
template <class T>
void linear_backward(Kernels<T>& dev, const char* name, const T* x, const T* w, const T* dy,
                     int64_t n, int64_t in, int64_t out, T* dx, T* dw, T* db, MatmulStats* stats,
                     DeferredWeightGrads<T>* deferred = nullptr);

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
