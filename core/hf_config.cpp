// Hugging Face config.json files read directly: a table entry per model_type maps that family's
// keys onto Model; keys that do not change the shape are skipped by name, anything else is an
// error.
#include <filesystem>
#include <utility>

#include "core/model.h"
#include "core/model_fields.h"

namespace shardplan {

namespace {

// Keys of Hugging Face configs that change neither a parameter shape nor the work of a training
// step, skipped by name. When a published config carries a key that belongs here, add it; a key
// that changes a shape must be read by its family's reader below instead.
constexpr std::string_view kHfShapeFreeKeys[] = {
    // Bookkeeping and serving.
    "_name_or_path",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "use_cache",
    "tokenizer_class",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "task_specific_params",
    // Initialisation, norm epsilon, dropout: numbers inside the same shapes.
    "initializer_range",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "attention_dropout",
    "hidden_dropout",
    "attn_pdrop",
    "embd_pdrop",
    "resid_pdrop",
    "attention_probs_dropout_prob",
    "hidden_dropout_prob",
    "classifier_dropout",
    // Rotary embeddings are computed, not learned (Su et al. 2021); partial rotation (NeoX's
    // rotary_pct) and the frequency base or scaling change no shape.
    "rope_theta",
    "rope_scaling",
    "rotary_emb_base",
    "rotary_pct",
    // Sliding-window attention (Mistral, Qwen2) masks scores and adds no parameter; shardplan
    // prices full causal attention, exact for sequences no longer than the window.
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    // MoE training switches: the auxiliary load-balancing loss and router-logit output.
    "output_router_logits",
    "router_aux_loss_coef",
    "router_jitter_noise",
    // Llama 2's pretraining tensor-parallel degree, only used to reproduce its matmul order.
    "pretraining_tp",
    // GPT-NeoX's parallel residual (Black et al. 2022 §2.1): same parameters, same FLOPs.
    "use_parallel_residual",
    // GPT-2: n_ctx duplicates n_positions; attention-scaling switches; the sequence-summary head
    // of GPT2DoubleHeadsModel, which the causal LM does not build.
    "n_ctx",
    "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx",
    "reorder_and_upcast_attn",
    "summary_activation",
    "summary_first_dropout",
    "summary_proj_to_labels",
    "summary_type",
    "summary_use_proj",
};

// GPT2Config's names; GPT-2 has neither GQA nor a head_dim key. n_inner null or absent means
// 4·n_embd (GPT2MLP, after Radford et al. 2018 §4.1).
constexpr SizeKeys kGpt2Keys{.layers = "n_layer",
                             .hidden = "n_embd",
                             .heads = "n_head",
                             .kv_heads = "",
                             .head_dim = "",
                             .ffn = "n_inner",
                             .vocab = "vocab_size",
                             .positions = "n_positions",
                             .ffn_per_hidden = 4};
// GPTNeoXConfig: our names, without GQA or a head_dim key.
constexpr SizeKeys kNeoxKeys{.kv_heads = "", .head_dim = ""};

// Each family's own keys, read after the shared ones.
void read_llama_biases(ObjectReader& r, Model& m) {
  // LlamaAttention gives q, k, v and o_proj bias=attention_bias; LlamaMLP gives all three
  // bias=mlp_bias.
  m.qkv_bias = m.out_bias = r.boolean_or("attention_bias", false);
  m.mlp_bias = r.boolean_or("mlp_bias", false);
}

void read_no_more(ObjectReader&, Model&) {}  // Mistral: Llama's shape without bias options

void read_qwen2_biases(ObjectReader&, Model& m) {
  m.qkv_bias = true;  // Qwen2Attention: q, k, v_proj bias=True, o_proj bias=False
}

void read_mixtral_experts(ObjectReader& r, Model& m) {
  // Every layer is sparse; each expert is a gated MLP of intermediate_size (MixtralConfig).
  m.moe.num_experts = int_field(r, "num_local_experts");
  m.moe.top_k = int_field(r, "num_experts_per_tok");
  m.moe.expert_ffn_hidden = m.ffn_hidden;
  m.moe.layer_freq = 1;
}

void read_gpt2_rest(ObjectReader& r, Model& m) {
  m.qkv_bias = m.out_bias = m.mlp_bias = true;  // every Conv1D of GPT-2 has a bias
  if (r.boolean_or("add_cross_attention", false))
    r.fail("add_cross_attention", "cross-attention layers are not part of a decoder-only model");
}

void read_neox_biases(ObjectReader& r, Model& m) {
  // GPTNeoXAttention: query_key_value and dense bias=attention_bias (default true); the MLP's
  // dense_h_to_4h and dense_4h_to_h always carry biases.
  m.qkv_bias = m.out_bias = r.boolean_or("attention_bias", true);
  m.mlp_bias = true;
}

// What a model_type fixes and what it reads. Llama and its descendants (Mistral, Mixtral, Qwen2)
// have RMSNorm, RoPE and a gated MLP: down(act(gate(x)) · up(x)), which is ours only with a SiLU
// gate (swiglu). GPT-2 and GPT-NeoX have LayerNorm and a plain two-matrix GELU MLP.
struct HfFamily {
  std::string_view model_type;
  const SizeKeys& keys;
  std::string_view activation_key;
  Activation activation;  // the MLP this family builds; also the default when the key is absent
  Norm norm;
  PositionEmbedding position_embedding;
  bool tied_by_default;  // the config class's tie_word_embeddings default
  void (*read_rest)(ObjectReader&, Model&);
};

constexpr HfFamily kHfFamilies[] = {
    {"llama", kSizeKeys, "hidden_act", Activation::swiglu, Norm::rmsnorm, PositionEmbedding::rope,
     false, read_llama_biases},
    {"mistral", kSizeKeys, "hidden_act", Activation::swiglu, Norm::rmsnorm, PositionEmbedding::rope,
     false, read_no_more},
    {"mixtral", kSizeKeys, "hidden_act", Activation::swiglu, Norm::rmsnorm, PositionEmbedding::rope,
     false, read_mixtral_experts},
    {"qwen2", kSizeKeys, "hidden_act", Activation::swiglu, Norm::rmsnorm, PositionEmbedding::rope,
     false, read_qwen2_biases},
    // GPT2Config inherits PretrainedConfig's tie_word_embeddings=True.
    {"gpt2", kGpt2Keys, "activation_function", Activation::gelu, Norm::layernorm,
     PositionEmbedding::learned, true, read_gpt2_rest},
    // GPTNeoX's embed_out is separate from embed_in.
    {"gpt_neox", kNeoxKeys, "hidden_act", Activation::gelu, Norm::layernorm,
     PositionEmbedding::rope, false, read_neox_biases},
};

Model read_family(ObjectReader& r, const HfFamily& f) {
  Model m;
  read_sizes(r, f.keys, m);
  m.activation = activation_field_or(r, f.activation_key, f.activation);
  if (m.activation != f.activation)
    r.fail(f.activation_key,
           f.activation == Activation::swiglu
               ? "this family's MLP is gated; only a SiLU gate (swiglu) is modelled"
               : "this family's MLP is not gated; only its GELU variants are modelled");
  m.norm = f.norm;
  m.position_embedding = f.position_embedding;
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", f.tied_by_default);
  f.read_rest(r, m);
  return m;
}

const HfFamily* find_family(std::string_view model_type) {
  for (const HfFamily& f : kHfFamilies)
    if (f.model_type == model_type) return &f;
  return nullptr;
}

// A config's name: the folder holding it (hub checkouts are named after the repository).
std::string name_from_path(const std::string& file, std::string_view model_type) {
  const std::string folder = std::filesystem::path(file).parent_path().filename().string();
  return folder.empty() ? std::string(model_type) : folder;
}

// validate_model names the sizes as our JSON does; renamed to the family's keys where they differ.
void validate_in_family_names(const Model& m, const std::string& file, const SizeKeys& keys) {
  try {
    validate_model(m, file);
  } catch (const InputError& e) {
    const std::pair<std::string_view, std::string_view> names[] = {
        {kSizeKeys.layers, keys.layers},
        {kSizeKeys.hidden, keys.hidden},
        {kSizeKeys.heads, keys.heads},
        {kSizeKeys.positions, keys.positions},
        {kSizeKeys.ffn, keys.ffn}};
    for (const auto& [ours, theirs] : names)
      if (e.field == ours && ours != theirs)
        throw InputError(e.file, std::string(theirs), e.reason, e.hint);
    throw;
  }
}

}  // namespace

std::string hf_model_types() {
  std::string out;
  for (const HfFamily& f : kHfFamilies)
    out += (out.empty() ? "" : ", ") + std::string(f.model_type);
  return out;
}

Model model_from_hf_config(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  const std::string model_type = r.string("model_type");
  const HfFamily* family = find_family(model_type);
  if (!family)
    r.fail("model_type", fmt::format("unsupported Hugging Face model_type \"{}\"", model_type),
           "supported: " + hf_model_types() +
               "; or describe the model in shardplan's JSON (models/*.json)");
  Model m = read_family(r, *family);
  m.name = name_from_path(file, model_type);
  for (auto key : kHfShapeFreeKeys)
    if (r.has(key)) r.raw(key);
  try {
    r.reject_unknown();
  } catch (const InputError& e) {
    throw InputError(e.file, e.field,
                     fmt::format("key not understood for model_type {}", model_type),
                     "if it does not change the model's shape, add it to kHfShapeFreeKeys in "
                     "core/hf_config.cpp; otherwise read it in the " +
                         model_type + " entry of kHfFamilies there");
  }
  validate_in_family_names(m, file, family->keys);
  return m;
}

}  // namespace shardplan
