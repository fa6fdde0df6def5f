// The FLOPs MFU and HFU count: a step's model FLOPs in the published convention, and what
// recomputation adds to them.
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"

namespace shardplan {

// Model FLOPs of one step, Narayanan et al. 2021 eq. 3 without recomputation (Korthikanti et al.
// 2022 §6: 72·B·s·l·h²·(1 + s/6h + V/12lh) for GPT), generalised term by term to GQA, SwiGLU and
// MoE (top_k experts per token, plus the router): 3 × the forward matmul FLOPs of every layer and
// the head, attention counted over the full s×s scores.
double model_flops_per_step(const Model& m, int64_t global_batch, int64_t seq_len);

// The FLOPs recomputation adds to a step in the same convention (full: every layer's forward
// again, 96 instead of 72 in eq. 3; selective: the attention core QKᵀ and the product with V, as
// Megatron-LM re-runs it, where the unfused path the CPU executor runs re-forwards QKᵀ alone,
// compute_model.cpp).
// Model + recompute FLOPs are the hardware FLOPs of HFU (Chowdhery et al. 2022, Appendix B).
double recompute_flops_per_step(const Model& m, int64_t global_batch, int64_t seq_len, Recompute r);

}  // namespace shardplan
