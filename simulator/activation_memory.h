// Activation memory one rank keeps for the backward pass, per micro-batch, after Korthikanti et
// al. 2022 "Reducing Activation Recomputation in Large Transformer Models" §4 (Table 2), written
// term by term so that it also covers GQA, SwiGLU, MoE, flash attention and models without dropout,
// and reduces exactly to the paper's closed forms for a GPT layer (ffn = 4h, MHA, GeLU, dropout).
#pragma once

#include <array>
#include <cassert>
#include <cstdint>

#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"
#include "simulator/execution_options.h"
#include "simulator/rank_shape.h"

namespace shardplan {

// The tensors one transformer layer keeps for its backward, one micro-batch, one rank, in the
// order its forward makes them.
struct LayerTensors {
  std::array<int64_t, 20> bytes{};  // a layer keeps at most 18
  int count = 0;

  void add(int64_t b) {
    assert(static_cast<size_t>(count) < bytes.size());
    bytes[static_cast<size_t>(count++)] = b;
  }
  int64_t total() const {
    int64_t sum = 0;
    for (int i = 0; i < count; ++i) sum += bytes[static_cast<size_t>(i)];
    return sum;
  }
};
// With FP8 linears (`fp8`, Training::fp8) their inputs are kept in FP8.
LayerTensors layer_activation_tensors(const Model& m, Dtype dtype, const RankShape& r,
                                      bool moe_layer, Recompute recompute,
                                      const ExecutionOptions& x, Fp8Recipe fp8);

// Their sum.
int64_t layer_activation_bytes(const Model& m, Dtype dtype, const RankShape& r, bool moe_layer,
                               Recompute recompute, const ExecutionOptions& x, Fp8Recipe fp8);

// The gradients one layer's backward holds beside the activations it has not freed yet, at their
// most: the gradient coming in and the layer input's gradient it accumulates (2 × tokens × h in
// the norm regions), then the MLP's activation gradient (tokens × ffn/tp) and fc1's output
// gradient (× 2 under SwiGLU: gate and up) once the activation itself is freed. The CUDA
// executor's run of a 1.3B GPT held these to the byte at its peak (docs/measurements.md); PyTorch's
// autograd holds the same three through an MLP's backward. In the order they are taken: the
// gradient coming in, the MLP's, the layer input's (the allocator replay frees the MLP's first).
LayerTensors layer_backward_buffers(const Model& m, Dtype dtype, const RankShape& r,
                                    bool moe_layer);

// What a layer holds between its B and its W under a split backward (Qi et al. 2024 §2: W
// computes dW = Xᵀ·dY of each linear layer): each linear layer's input and output gradient for
// every token of the micro-batch (gathered under sequence parallelism). B frees the rest of the
// layer's activations (the attention probabilities, the activation's input, dropout masks, norm
// inputs), as autograd frees a node's saved tensors once its input gradient is computed.
// FP8 linears (`fp8`) keep X and dY in one byte an element.
LayerTensors layer_weight_grad_tensors(const Model& m, Dtype dtype, const RankShape& r,
                                       bool moe_layer, Fp8Recipe fp8);

// First stage: the embedding dropout mask (Korthikanti §4.3: sbhp/t over p in-flight
// micro-batches).
int64_t input_layer_activation_bytes(const Model& m, const RankShape& r, const ExecutionOptions& x);

// Last stage: the inputs of the final norm and of the LM head (Korthikanti §4.3: 4sbh/t with SP).
int64_t output_layer_activation_bytes(const Model& m, Dtype dtype, const RankShape& r);

// Last stage: the loss over the logits, by the framework's kernels (core/framework.h).
struct LossMemory {
  // The fp32 softmax (or log-softmax) kept for the backward, per micro-batch (Korthikanti §4.3:
  // 4sbv/t).
  int64_t saved = 0;
  // Alive only while the loss runs: the compute-dtype logits (the head's output before the fp32
  // cast, and their gradient after), and where the kernels make one, a second fp32 copy (the cast
  // beside an out-of-place softmax: PyTorch's log_softmax, nanotron's shifted logits).
  int64_t transient = 0;
  bool operator==(const LossMemory&) const = default;
};
LossMemory loss_memory(const Model& m, Dtype dtype, const RankShape& r, CrossEntropyKernel k);

}  // namespace shardplan
