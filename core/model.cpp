// Parameter counts by component and the layout-free shape checks of a Model.
#include "core/model.h"

#include <fmt/format.h>

#include "core/error.h"

namespace shardplan {

namespace {

// One MLP with `ffn` intermediate units. The shapes are those of Hugging Face's modules:
// GPT2MLP / GPTNeoXMLP have two projections (h×f up, f×h down, Radford et al. 2019 after Vaswani
// et al. 2017 §3.3); LlamaMLP / MistralMLP / Qwen2MLP and each MixtralBlockSparseTop2MLP have
// three (gate h×f, up h×f, down f×h: SwiGLU, Shazeer 2020 eq. 6). Biases, when present, are one per
// output unit.
int64_t mlp_params(const Model& m, int64_t ffn) {
  const int64_t h = m.hidden;
  if (m.activation == Activation::swiglu) return 3 * h * ffn + (m.mlp_bias ? 2 * ffn + h : 0);
  return 2 * h * ffn + (m.mlp_bias ? ffn + h : 0);
}

}  // namespace

int64_t norm_params(const Model& m) {
  // LayerNorm (Ba et al. 2016) has a gain and a bias per unit; RMSNorm (Zhang & Sennrich 2019)
  // only the gain.
  return m.norm == Norm::layernorm ? 2 * m.hidden : m.hidden;
}

int64_t attention_params_per_layer(const Model& m) {
  // q and o span all heads, k and v only the key/value heads (grouped-query attention,
  // Ainslie et al. 2023 §2.2): q: h×(H·d), k, v: h×(Hkv·d), o: (H·d)×h.
  const int64_t q_width = m.num_heads * m.head_dim;
  const int64_t kv_width = m.num_kv_heads * m.head_dim;
  const int64_t weights = 2 * m.hidden * q_width + 2 * m.hidden * kv_width;
  const int64_t biases = (m.qkv_bias ? q_width + 2 * kv_width : 0) + (m.out_bias ? m.hidden : 0);
  return weights + biases;
}

int64_t mlp_params_per_layer(const Model& m) {
  return mlp_params(m, m.ffn_hidden);
}

int64_t expert_params_per_layer(const Model& m) {
  return m.is_moe() ? mlp_params(m, m.moe.expert_ffn_hidden) : 0;
}

// Two norms per layer: before attention and before the MLP (pre-LN, as in GPT-2, Llama, NeoX).
int64_t norm_params_per_layer(const Model& m) {
  return 2 * norm_params(m);
}

ParamCounts count_parameters(const Model& m) {
  const int64_t moe_layers = m.num_moe_layers();
  const int64_t dense_layers = m.num_layers - moe_layers;
  ParamCounts c;
  c.embedding = m.vocab * m.hidden;
  c.position_embedding =
      m.position_embedding == PositionEmbedding::learned ? m.max_seq * m.hidden : 0;
  c.attention = m.num_layers * attention_params_per_layer(m);
  c.mlp = dense_layers * mlp_params_per_layer(m);
  c.experts = moe_layers * m.moe.num_experts * expert_params_per_layer(m);
  // The router is one h×E linear map without bias per MoE layer (Mixtral's `gate`,
  // Jiang et al. 2024 §2.1).
  c.router = moe_layers * m.hidden * m.moe.num_experts;
  c.norms = m.num_layers * norm_params_per_layer(m) + norm_params(m);  // + the final norm
  c.head = m.tied_embeddings ? 0 : m.vocab * m.hidden;
  // A token passes through top_k of the num_experts experts of each MoE layer and everything else.
  c.active = c.total() - c.experts + moe_layers * m.moe.top_k * expert_params_per_layer(m);
  return c;
}

void validate_model(const Model& m, const std::string& file) {
  auto fail = [&](const char* field, const std::string& reason, const std::string& hint = "") {
    throw InputError(file, field, reason, hint);
  };
  auto positive = [&](const char* field, int64_t v) {
    if (v <= 0) fail(field, fmt::format("must be positive, found {}", v));
  };
  positive("num_hidden_layers", m.num_layers);
  // Thirty times the deepest model trained (Megatron-LM's 1T, 128 layers): past it, planning and
  // simulating would run for minutes and hold gigabytes per layer count.
  constexpr int64_t kMaxLayers = 4096;
  if (m.num_layers > kMaxLayers)
    fail("num_hidden_layers", fmt::format("{} is above the {} layers shardplan plans for",
                                          m.num_layers, kMaxLayers));
  positive("hidden_size", m.hidden);
  positive("num_attention_heads", m.num_heads);
  positive("num_key_value_heads", m.num_kv_heads);
  positive("head_dim", m.head_dim);
  positive("intermediate_size", m.ffn_hidden);
  positive("vocab_size", m.vocab);
  positive("max_position_embeddings", m.max_seq);
  // Bounds far past every published model (widest: Megatron-LM's 1T, hidden 25,600 and MLP
  // 102,400, Narayanan et al. 2021 Table 1; vocabularies to 262,144; contexts to 10M tokens) that
  // keep every parameter and activation count of 64 bits from overflowing.
  auto at_most = [&](const char* field, int64_t v, int64_t limit) {
    if (v > limit) fail(field, fmt::format("{} is above the {} shardplan plans for", v, limit));
  };
  constexpr int64_t kMaxWidth = int64_t{1} << 20;
  at_most("hidden_size", m.hidden, kMaxWidth);
  at_most("intermediate_size", m.ffn_hidden, kMaxWidth);
  at_most("num_attention_heads", m.num_heads, kMaxWidth);
  at_most("head_dim", m.head_dim, kMaxWidth);
  at_most("head_dim", m.num_heads * m.head_dim, kMaxWidth);  // the attention's width
  at_most("vocab_size", m.vocab, int64_t{1} << 24);
  at_most("max_position_embeddings", m.max_seq, int64_t{1} << 30);
  if (m.num_heads % m.num_kv_heads != 0)
    fail("num_key_value_heads",
         fmt::format("{} does not divide num_attention_heads={}", m.num_kv_heads, m.num_heads),
         "each key/value head serves a whole group of query heads");

  const Moe& e = m.moe;
  if (e.num_experts < 0)
    fail("num_local_experts", fmt::format("must not be negative, found {}", e.num_experts));
  if (e.num_experts == 0) {
    if (e.top_k != 0)
      fail("num_experts_per_tok", fmt::format("is {} but the model has no experts", e.top_k),
           "set num_local_experts for a mixture-of-experts model");
    return;
  }
  positive("num_experts_per_tok", e.top_k);
  if (e.top_k > e.num_experts)
    fail("num_experts_per_tok",
         fmt::format("{} exceeds num_local_experts={}", e.top_k, e.num_experts));
  positive("moe_intermediate_size", e.expert_ffn_hidden);
  // All of a layer's experts together as wide as kMaxWidth allows one MLP, times four (DeepSeek-V3:
  // 256 x 2,048; Kimi K2: 384 x 2,048).
  at_most("num_local_experts", e.num_experts, kMaxWidth);
  at_most("moe_intermediate_size", e.expert_ffn_hidden, kMaxWidth);
  at_most("moe_intermediate_size", e.num_experts * e.expert_ffn_hidden, 4 * kMaxWidth);
  positive("moe_layer_freq", e.layer_freq);
  if (e.layer_freq > m.num_layers)
    fail("moe_layer_freq", fmt::format("{} exceeds num_hidden_layers={}: no layer would be MoE",
                                       e.layer_freq, m.num_layers));
}

bool operator==(const Moe& a, const Moe& b) {
  return a.num_experts == b.num_experts && a.top_k == b.top_k &&
         a.expert_ffn_hidden == b.expert_ffn_hidden && a.layer_freq == b.layer_freq;
}

bool operator==(const Model& a, const Model& b) {
  return a.name == b.name && a.num_layers == b.num_layers && a.hidden == b.hidden &&
         a.num_heads == b.num_heads && a.num_kv_heads == b.num_kv_heads &&
         a.head_dim == b.head_dim && a.ffn_hidden == b.ffn_hidden && a.vocab == b.vocab &&
         a.max_seq == b.max_seq && a.activation == b.activation && a.norm == b.norm &&
         a.position_embedding == b.position_embedding && a.tied_embeddings == b.tied_embeddings &&
         a.qkv_bias == b.qkv_bias && a.out_bias == b.out_bias && a.mlp_bias == b.mlp_bias &&
         a.moe == b.moe;
}

}  // namespace shardplan
