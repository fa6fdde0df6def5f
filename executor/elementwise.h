// Per-element math of the GPT layers and of Adam, as inline functions that compile for the host
// and, under nvcc, for the device: the CPU layers call them, so the CPU tests cover a CUDA kernel
// that calls them too. Templated on the scalar (float in training, double in the gradient checks).
#pragma once

#include <cmath>

#include "executor/host_device.h"

namespace shardplan::ew {

template <class T>
SHARDPLAN_HD inline T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// GELU, tanh approximation (Hendrycks & Gimpel 2016, §2; the form GPT-2 uses):
//   gelu(x) = x/2 · (1 + tanh(u)),  u = √(2/π) · (x + 0.044715 x³),
// computed as x · σ(2u), since (1 + tanh u)/2 = σ(2u): one exp instead of a tanh.
template <class T>
SHARDPLAN_HD inline T gelu_inner(T x) {
  return T(0.7978845608028654) * (x + T(0.044715) * x * x * x);  // √(2/π)(x + 0.044715x³)
}
template <class T>
SHARDPLAN_HD inline T gelu(T x) {
  return x * sigmoid(T(2) * gelu_inner(x));
}

// d gelu / dx = ½(1 + t) + ½x(1 − t²)·u′ with t = tanh u, u′ = √(2/π)(1 + 3·0.044715 x²); with
// s = σ(2u): ½(1 + t) = s and ½(1 − t²) = 2s(1 − s).
template <class T>
SHARDPLAN_HD inline T gelu_grad(T x) {
  const T s = sigmoid(T(2) * gelu_inner(x));
  const T du = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * x * x);
  return s + T(2) * x * s * (T(1) - s) * du;
}

// SiLU (Elfwing et al. 2018, "swish"): x·σ(x); derivative σ(x)·(1 + x(1 − σ(x))).
template <class T>
SHARDPLAN_HD inline T silu(T x) {
  return x * sigmoid(x);
}
template <class T>
SHARDPLAN_HD inline T silu_grad(T x) {
  const T s = sigmoid(x);
  return s * (T(1) + x * (T(1) - s));
}

// SwiGLU (Shazeer 2020, eq. 6): silu(gate) · up, and the gradients of both inputs given dy.
template <class T>
SHARDPLAN_HD inline T swiglu(T gate, T up) {
  return silu(gate) * up;
}
template <class T>
SHARDPLAN_HD inline T swiglu_grad_gate(T gate, T up, T dy) {
  return dy * up * silu_grad(gate);
}
template <class T>
SHARDPLAN_HD inline T swiglu_grad_up(T gate, T dy) {
  return dy * silu(gate);
}

// LayerNorm (Ba et al. 2016, eq. 4) and RMSNorm (Zhang & Sennrich 2019, eq. 4), per element of a
// row once the row statistics are known: x̂ = (x − mean)·rstd, with mean = 0 for RMSNorm; y = x̂·w +
// b.
template <class T>
SHARDPLAN_HD inline T norm_rstd(T mean_square_deviation, T eps) {
  return T(1) / std::sqrt(mean_square_deviation + eps);
}
template <class T>
SHARDPLAN_HD inline T norm_normalize(T x, T mean, T rstd) {
  return (x - mean) * rstd;
}
// Backward of one element: with g = dy·w (the gradient of x̂) and the row means of g and g·x̂,
//   LayerNorm: dx = rstd·(g − mean(g) − x̂·mean(g·x̂));  RMSNorm: the same with mean(g) taken as 0.
template <class T>
SHARDPLAN_HD inline T norm_input_grad(T g, T xhat, T rstd, T mean_g, T mean_g_xhat) {
  return rstd * (g - mean_g - xhat * mean_g_xhat);
}

// Softmax with the row maximum subtracted first, so that exp never overflows (Goodfellow et al.
// 2016, §4.1): p_i = exp(x_i − max) / Σ_j exp(x_j − max).
template <class T>
SHARDPLAN_HD inline T softmax_numerator(T x, T row_max) {
  return std::exp(x - row_max);
}
// Backward of softmax for one element: dx_i = p_i·(dp_i − Σ_j p_j dp_j).
template <class T>
SHARDPLAN_HD inline T softmax_input_grad(T p, T dp, T row_dot) {
  return p * (dp - row_dot);
}

// Cross-entropy of one token from the (possibly all-reduced) row max, Σ exp(logit − max) and target
// logit: −log p_target = log Σ exp(logit − max) + max − logit_target.
template <class T>
SHARDPLAN_HD inline T cross_entropy_loss(T row_max, T sum_exp, T target_logit) {
  return std::log(sum_exp) + row_max - target_logit;
}
// d loss / d logit_i = (p_i − [i = target]) · scale, scale = d(total loss)/d(this token's loss).
template <class T>
SHARDPLAN_HD inline T cross_entropy_logit_grad(T p, bool is_target, T scale) {
  return (p - (is_target ? T(1) : T(0))) * scale;
}

// One element of Adam at step t ≥ 1 (Kingma & Ba 2015, Algorithm 1, with the bias corrections
// 1 − β^t), plus AdamW's decoupled decay: θ ← θ − lr·(m̂/(√v̂ + ε) + λθ).
// bias_correction1/2 are 1 − β1^t and 1 − β2^t, computed once per step by the caller.
SHARDPLAN_HD inline void adam_update(float& param, float grad, float& m, float& v, float lr,
                                     float beta1, float beta2, float eps, float weight_decay,
                                     float bias_correction1, float bias_correction2) {
  m = beta1 * m + (1.0f - beta1) * grad;
  v = beta2 * v + (1.0f - beta2) * grad * grad;
  const float m_hat = m / bias_correction1;
  const float v_hat = v / bias_correction2;
  param -= lr * (m_hat / (std::sqrt(v_hat) + eps) + weight_decay * param);
}

}  // namespace shardplan::ew
