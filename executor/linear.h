// A fully connected layer y = x·Wᵀ + b over row-major activations, W stored [out, in] as PyTorch
// stores it, so a column-parallel shard of W is a block of its rows and a row-parallel one a block
// of its columns (Shoeybi et al. 2019, §3).
#pragma once

#include <cstdint>

#include "executor/matmul.h"

namespace shardplan {

// y[n, out] = x[n, in]·w[out, in]ᵀ (+ b[out] when b is not null).
template <class T>
void linear_forward(const T* x, const T* w, const T* b, int64_t n, int64_t in, int64_t out, T* y,
                    MatmulStats* stats);

// dx[n, in] = dy·w (overwritten); dw += dyᵀ·x; db += Σ_rows dy (when db is not null).
template <class T>
void linear_backward(const T* x, const T* w, const T* dy, int64_t n, int64_t in, int64_t out, T* dx,
                     T* dw, T* db, MatmulStats* stats);

// db[cols] += Σ_rows dy[rows, cols]: the gradient of a bias added to every row.
template <class T>
void bias_backward(const T* dy, int64_t rows, int64_t cols, T* db);

}  // namespace shardplan
