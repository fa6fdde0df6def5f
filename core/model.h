// The model description: a decoder-only transformer as Hugging Face configs describe it (dense or
// mixture-of-experts), with parameter counts derived per component.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace shardplan {

enum class Activation { gelu, swiglu };
enum class Norm { layernorm, rmsnorm };
enum class PositionEmbedding { learned, rope };

inline constexpr EnumNames<Activation, 2> kActivationNames{
    {{Activation::gelu, "gelu"}, {Activation::swiglu, "swiglu"}}};
inline constexpr EnumNames<Norm, 2> kNormNames{
    {{Norm::layernorm, "layernorm"}, {Norm::rmsnorm, "rmsnorm"}}};
inline constexpr EnumNames<PositionEmbedding, 2> kPositionEmbeddingNames{
    {{PositionEmbedding::learned, "learned"}, {PositionEmbedding::rope, "rope"}}};

// Mixture of experts (Mixtral, Switch): num_experts == 0 means a dense model.
struct Moe {
  int num_experts = 0;            // num_local_experts
  int top_k = 0;                  // num_experts_per_tok
  int64_t expert_ffn_hidden = 0;  // intermediate size of one expert
  int layer_freq = 1;             // every layer_freq-th layer is MoE (1: all of them)
};

struct Model {
  std::string name;
  int num_layers = 0;      // num_hidden_layers
  int64_t hidden = 0;      // hidden_size
  int num_heads = 0;       // num_attention_heads
  int num_kv_heads = 0;    // num_key_value_heads (== num_heads without GQA)
  int64_t head_dim = 0;    // hidden / num_heads unless given
  int64_t ffn_hidden = 0;  // intermediate_size of the dense MLP
  int64_t vocab = 0;       // vocab_size
  int64_t max_seq = 0;     // max_position_embeddings
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  PositionEmbedding position_embedding = PositionEmbedding::learned;
  bool tied_embeddings = false;  // tie_word_embeddings: the LM head reuses the token embedding
  bool qkv_bias = false;         // bias on the q, k, v projections (GPT-2, Qwen)
  bool out_bias = false;         // bias on the attention output projection (GPT-2)
  bool mlp_bias = false;         // bias on the MLP projections (GPT-2)
  Moe moe;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_moe_layer(int layer) const { return is_moe() && (layer + 1) % moe.layer_freq == 0; }
  int num_moe_layers() const { return is_moe() ? num_layers / moe.layer_freq : 0; }
};

// Parameter counts by component for the whole model (not divided by any parallelism).
struct ParamCounts {
  int64_t embedding = 0;           // token embedding
  int64_t position_embedding = 0;  // learned positions, 0 under RoPE
  int64_t attention = 0;           // q, k, v, o weights and biases, all layers
  int64_t mlp = 0;                 // dense MLP weights and biases, all dense layers
  int64_t experts = 0;             // expert MLPs, all MoE layers
  int64_t router = 0;              // MoE gate, all MoE layers
  int64_t norms = 0;               // per-layer norms and the final norm
  int64_t head = 0;                // LM head, 0 when tied

  int64_t total() const {
    return embedding + position_embedding + attention + mlp + experts + router + norms + head;
  }
  // Parameters that one token passes through (MoE: top_k of num_experts experts).
  int64_t active = 0;
};

ParamCounts count_parameters(const Model& m);

// Per-layer counts, the unit the cost model and the executor shard.
int64_t attention_params_per_layer(const Model& m);
int64_t mlp_params_per_layer(const Model& m);     // one dense MLP
int64_t expert_params_per_layer(const Model& m);  // one expert
int64_t norm_params_per_layer(const Model& m);

// Reads our model JSON (Hugging Face field names, unknown keys rejected) or a Hugging Face
// config.json (recognised by "model_type"; keys that do not change the shape of training are
// skipped by name). `file` names the source in errors. Validates before returning.
Model model_from_json(const nlohmann::json& j, const std::string& file);
nlohmann::json model_to_json(const Model& m);  // our format; reads back to an equal Model

// A Hugging Face config.json, recognised by "model_type" (model_from_json calls this when the key
// is present). Supported families are listed by hf_model_types().
Model model_from_hf_config(const nlohmann::json& j, const std::string& file);
std::string hf_model_types();  // "llama, mistral, ...", for error hints

// Our activation names plus Hugging Face's: "silu" and "swiglu" mean a gated SiLU MLP (swiglu);
// "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast" mean a plain GELU MLP (gelu).
std::optional<Activation> activation_from_name(std::string_view name);
std::string activation_choices();  // every accepted name, for error hints

// Parameters of one norm (layernorm: weight and bias; rmsnorm: weight only).
int64_t norm_params(const Model& m);

// Shape checks that do not depend on a layout: positive sizes, heads divide hidden, kv heads
// divide heads, top_k <= num_experts. Throws InputError naming `file` and the field.
void validate_model(const Model& m, const std::string& file);

bool operator==(const Moe&, const Moe&);
bool operator==(const Model&, const Model&);

}  // namespace shardplan
