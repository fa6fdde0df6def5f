// The memory-bound kernels between a layer's matmuls, named once for the cost model that prices
// them and for the calibration that measures them on a backend. Each kernel's work is counted in
// elements, one element being:
//   norm_*          one element of the normalised [tokens, hidden]
//   residual_*      one element of the residual stream [tokens, hidden] (the add after a block;
//                   backward: the gradient passed through it)
//   bias_*          one element of a linear layer's output [tokens, out] (unfused bias add;
//                   backward: the column sum of its gradient)
//   gelu_*, swiglu_* one element of the activation's output [tokens, ffn]
//   softmax_*       one attention score [batch, heads, seq, seq_kv] (unfused attention)
//   rope            one element of q and k
//   permute         one element of a token copy routed to an expert
//   embedding_*     one element of the embedding's output [tokens, hidden]
//   cross_entropy_* one logit [tokens, vocab]
//   optimizer_step  one parameter updated
//   grad_accumulate one weight-gradient element added into the step's accumulated gradient
//   fp8_cast        one element of a linear layer's input, weight or output gradient quantized to
//                   FP8 (core/dtype.h: Fp8Recipe)
#pragma once

#include <cstdint>

#include "core/enum_names.h"

namespace shardplan {

enum class MemoryKernel : uint8_t {
  norm_forward,
  norm_backward,
  residual_forward,
  residual_backward,
  bias_forward,
  bias_backward,
  gelu_forward,
  gelu_backward,
  swiglu_forward,
  swiglu_backward,
  softmax_forward,
  softmax_backward,
  rope,
  permute,
  embedding_forward,
  embedding_backward,
  cross_entropy_forward,
  cross_entropy_backward,
  optimizer_step,
  grad_accumulate,
  fp8_cast,
};
inline constexpr EnumNames<MemoryKernel, 21> kMemoryKernelNames{
    {{MemoryKernel::norm_forward, "norm_forward"},
     {MemoryKernel::norm_backward, "norm_backward"},
     {MemoryKernel::residual_forward, "residual_forward"},
     {MemoryKernel::residual_backward, "residual_backward"},
     {MemoryKernel::bias_forward, "bias_forward"},
     {MemoryKernel::bias_backward, "bias_backward"},
     {MemoryKernel::gelu_forward, "gelu_forward"},
     {MemoryKernel::gelu_backward, "gelu_backward"},
     {MemoryKernel::swiglu_forward, "swiglu_forward"},
     {MemoryKernel::swiglu_backward, "swiglu_backward"},
     {MemoryKernel::softmax_forward, "softmax_forward"},
     {MemoryKernel::softmax_backward, "softmax_backward"},
     {MemoryKernel::rope, "rope"},
     {MemoryKernel::permute, "permute"},
     {MemoryKernel::embedding_forward, "embedding_forward"},
     {MemoryKernel::embedding_backward, "embedding_backward"},
     {MemoryKernel::cross_entropy_forward, "cross_entropy_forward"},
     {MemoryKernel::cross_entropy_backward, "cross_entropy_backward"},
     {MemoryKernel::optimizer_step, "optimizer_step"},
     {MemoryKernel::grad_accumulate, "grad_accumulate"},
     {MemoryKernel::fp8_cast, "fp8_cast"}}};

}  // namespace shardplan
