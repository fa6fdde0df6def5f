// How the training framework runs the layers, which neither the model, the training nor the
// layout description says. Defaults follow today's Megatron-Core / TransformerEngine stacks.
#pragma once

namespace shardplan {

struct ExecutionOptions {
  // Fused attention that never materialises the s×s scores (Dao et al. 2022, 2023): removes the
  // 5as²b term of Korthikanti et al. 2022 eq. 1 and skips the masked half under a causal mask.
  bool flash_attention = true;
  // Dropout after attention and MLP (GPT-2/3, Megatron-LM 2021). Llama-style pre-training runs
  // without it (attention_dropout = 0 and no hidden dropout in their Hugging Face configs).
  bool dropout = false;
};

}  // namespace shardplan
