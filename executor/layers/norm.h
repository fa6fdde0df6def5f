// LayerNorm (Ba et al. 2016) and RMSNorm (Zhang & Sennrich 2019) over the rows of [rows, hidden],
// forward and backward; the per-element math is in elementwise.h.
#pragma once

#include <cstdint>

#include "core/model.h"

namespace shardplan {

// ε of LayerNorm and RMSNorm: GPT-2's layer_norm_epsilon (Hugging Face GPT2Config) and Llama 2's
// rms_norm_eps, both 1e-5.
inline constexpr double kNormEps = 1e-5;

// y = norm(x)·weight (+ bias for LayerNorm; bias is null for RMSNorm).
template <class T>
void norm_forward(Norm kind, const T* x, const T* weight, const T* bias, int64_t rows,
                  int64_t hidden, T* y);

// dx += ∂L/∂x (accumulated: the residual stream's gradient is already there); dweight, dbias +=.
// The rows' mean and 1/σ are computed again from x (one pass over the row) rather than kept from
// the forward pass, so a layer keeps only the activations Korthikanti et al. 2022 count.
template <class T>
void norm_backward(Norm kind, const T* x, const T* weight, const T* dy, int64_t rows,
                   int64_t hidden, T* dx, T* dweight, T* dbias);

}  // namespace shardplan
