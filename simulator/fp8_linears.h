// Transformer Engine's FP8 linear layers (Training::fp8) as the compute model prices them: the
// rates and casts of a layer's GEMMs (simulator/compute_model.cpp: PassBuilder::linear), and
// whether the weights' FP8 copies are kept over a step.
#pragma once

#include <optional>

#include "core/layout.h"
#include "core/training.h"
#include "simulator/device_efficiency.h"
#include "simulator/execution_options.h"

namespace shardplan {

// How Transformer Engine runs a linear layer in FP8 (Training::fp8; NVIDIA Transformer Engine,
// transformer_engine/pytorch/module/linear.py): each of its three GEMMs (forward, dgrad, wgrad) at
// the FP8 rate with 1-byte operands, once each operand is quantized — the input going forward, the
// output's gradient going backward, the weight once a step. A quantization reads its bf16 tensor
// and writes its FP8 copies (core/dtype.h: fp8_copies_bytes). Current scaling first reads the
// tensor once more for its amax (TE's Float8CurrentScalingQuantizer: compute_amax, then the cast);
// delayed scaling records the amax inside the cast (TE's DelayedScaling). The norms before QKV and
// fc1 write their output in FP8 themselves in TE's LayerNormLinear; that fusion is not priced
// apart (the transposed copy is still a pass of its own). The weights' copies are kept from the
// step's first micro-batch on: Megatron-Core passes is_first_microbatch to TE, which caches them
// (megatron/core/extensions/transformer_engine.py, TELinear.forward). In the compute dtype stay
// the router (TopKRouter is no TE module), the attention core (Megatron-Core's
// fp8_dot_product_attention is off by default) and the LM head (output_layer is a
// tensor_parallel.ColumnParallelLinear).
struct Fp8Linears {
  DeviceRates rates;         // fp8_gemm_rates
  double cast_bytes = 0;     // per element quantized
  double cast_launches = 0;  // per quantization
  // The weights' quantizations per micro-batch: 1 / micro-batches where fp8_weights_cached,
  // else 1.
  double weight_casts = 0;
};

// The FP8 linears of training `t` on a device of rates `r`; none without FP8.
std::optional<Fp8Linears> fp8_linears(const Training& t, const Layout& l, const DeviceRates& r,
                                      const ExecutionOptions& x);

// Whether Transformer Engine keeps its FP8 weight copies over a step's micro-batches: FP8
// training, a framework that caches them (ExecutionOptions::fp8_weight_cache), below ZeRO-3 (whose
// units are cast as they are gathered). Then the weights are quantized once a step and the copies
// are held (the fp8_weights memory item); else at every micro-batch, into buffers freed after it.
bool fp8_weights_cached(const Training& t, const Layout& l, const ExecutionOptions& x);

}  // namespace shardplan
