// How the training framework runs the layers, which neither the model, the training nor the
// layout description says, and what was measured on the machine that runs them. Defaults follow
// today's Megatron-Core / TransformerEngine stacks, priced from the datasheets.
#pragma once

namespace shardplan {

struct Profile;

struct ExecutionOptions {
  // Fused attention that never materialises the s×s scores (Dao et al. 2022, 2023): removes the
  // 5as²b term of Korthikanti et al. 2022 eq. 1 and skips the masked half under a causal mask.
  bool flash_attention = true;
  // Dropout after attention and MLP (GPT-2/3, Megatron-LM 2021). Llama-style pre-training runs
  // without it (attention_dropout = 0 and no hidden dropout in their Hugging Face configs).
  bool dropout = false;
  // A calibration profile (core/profile.h) to price with instead of the datasheet efficiencies:
  // GEMMs at its measured rates, memory-bound kernels at its bandwidth, collectives by its fits
  // where it has one for the group. The cluster is expected to carry apply_profile's overlay of
  // the same profile. Not owned: it must outlive every estimate made with it; null: datasheets.
  const Profile* profile = nullptr;
};

}  // namespace shardplan
