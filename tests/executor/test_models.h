// Small models for the executor's tests, built in code: a GPT-2-shaped one (LayerNorm, GELU,
// biases, tied embeddings) and a Llama-shaped one (RMSNorm, SwiGLU, grouped kv heads, no biases,
// untied head), both byte-level.
#pragma once

#include "core/model.h"

namespace shardplan::test {

enum class Family { gpt2, llama };

inline Model test_model(Family family, int layers, int64_t hidden, int heads, int kv_heads,
                        int64_t ffn, int64_t max_seq) {
  const bool gpt2 = family == Family::gpt2;
  Model m;
  m.name = gpt2 ? "gpt2-like" : "llama-like";
  m.num_layers = layers;
  m.hidden = hidden;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = ffn;
  m.vocab = 256;
  m.max_seq = max_seq;
  m.activation = gpt2 ? Activation::gelu : Activation::swiglu;
  m.norm = gpt2 ? Norm::layernorm : Norm::rmsnorm;
  m.tied_embeddings = m.qkv_bias = m.out_bias = m.mlp_bias = gpt2;
  return m;
}

inline Model gpt2_like(int layers = 2, int64_t hidden = 32, int heads = 4, int64_t ffn = 64,
                       int64_t max_seq = 16) {
  return test_model(Family::gpt2, layers, hidden, heads, heads, ffn, max_seq);
}

inline Model llama_like(int layers = 2, int64_t hidden = 32, int heads = 4, int kv_heads = 2,
                        int64_t ffn = 48, int64_t max_seq = 16) {
  return test_model(Family::llama, layers, hidden, heads, kv_heads, ffn, max_seq);
}

}  // namespace shardplan::test
