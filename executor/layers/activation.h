// The MLP's non-linearity over this rank's columns: GELU on fc1's output, or SwiGLU on fc1's output
// laid out [gate | up] (the gate and up projections computed by one GEMM).
#pragma once

#include <cstdint>

#include "core/model.h"

namespace shardplan {

// a[rows, ffn] from u[rows, ffn] (gelu) or u[rows, 2·ffn] = [gate | up] (swiglu).
template <class T>
void activation_forward(Activation kind, const T* u, int64_t rows, int64_t ffn, T* a);

// du (overwritten, u's shape) from da[rows, ffn].
template <class T>
void activation_backward(Activation kind, const T* u, const T* da, int64_t rows, int64_t ffn,
                         T* du);

}  // namespace shardplan
