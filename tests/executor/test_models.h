// Small models for the executor's tests, built in code: a GPT-2-shaped one (LayerNorm, GELU,
// biases, tied embeddings) and a Llama-shaped one (RMSNorm, SwiGLU, grouped kv heads, no biases,
// untied head), both byte-level.
#pragma once

#include "core/model.h"

namespace shardplan::test {

inline Model gpt2_like(int layers = 2, int64_t hidden = 32, int heads = 4, int64_t ffn = 64, int64_t max_seq = 16) {
  Model m;
  m.name = "gpt2-like";
  m.num_layers = layers;
  m.hidden = hidden;
  m.num_heads = m.num_kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = ffn;
  m.vocab = 256;
  m.max_seq = max_seq;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.tied_embeddings = true;
  m.qkv_bias = m.out_bias = m.mlp_bias = true;
  return m;
}

inline Model llama_like(int layers = 2, int64_t hidden = 32, int heads = 4, int kv_heads = 2, int64_t ffn = 48,
                        int64_t max_seq = 16) {
  Model m = gpt2_like(layers, hidden, heads, ffn, max_seq);
  m.name = "llama-like";
  m.num_kv_heads = kv_heads;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.tied_embeddings = false;
  m.qkv_bias = m.out_bias = m.mlp_bias = false;
  return m;
}

}  // namespace shardplan::test
