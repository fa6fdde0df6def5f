// Our model JSON (Hugging Face field names, strict) in both directions; Hugging Face configs are
// passed on to hf_config.cpp.
#include <filesystem>

#include "core/model.h"
#include "core/model_fields.h"

namespace shardplan {

namespace {

// Keys that only make sense with experts; given on a dense model they are a mistake.
constexpr std::string_view kMoeOnlyKeys[] = {"moe_intermediate_size", "moe_layer_freq"};

Moe read_moe(ObjectReader& r, int64_t ffn_hidden) {
  Moe moe;
  moe.num_experts = int_field_or(r, "num_local_experts", 0);
  const bool dense = moe.num_experts <= 0;  // a negative count is left to validate_model
  for (auto key : kMoeOnlyKeys)
    if (dense && r.has(key))
      r.fail(key, "given but the model has no experts", "set num_local_experts");
  // On a dense model num_experts_per_tok is left to validate_model, which names it.
  moe.top_k =
      dense ? int_field_or(r, "num_experts_per_tok", 0) : int_field(r, "num_experts_per_tok");
  moe.expert_ffn_hidden = r.integer_or("moe_intermediate_size", dense ? 0 : ffn_hidden);
  moe.layer_freq = int_field_or(r, "moe_layer_freq", 1);
  return moe;
}

}  // namespace

// Keys every Hugging Face config.json carries and shardplan's model JSON never does.
constexpr std::string_view kHfOnlyKeys[] = {"architectures", "transformers_version", "torch_dtype",
                                            "rms_norm_eps", "layer_norm_eps"};

Model model_from_json(const nlohmann::json& j, const std::string& file) {
  if (j.is_object() && j.contains("model_type")) return model_from_hf_config(j, file);
  ObjectReader r(j, file);
  for (std::string_view key : kHfOnlyKeys)
    if (r.has(key))
      r.fail("model_type",
             fmt::format("missing: the file reads as a Hugging Face config.json (it has \"{}\"), "
                         "which names its family in model_type",
                         key),
             "add the model's model_type (supported: " + hf_model_types() + ")");
  r.ignore({"source"});  // documents where the figures come from
  Model m;
  m.name = r.string_or("name", std::filesystem::path(file).stem().string());
  read_sizes(r, kSizeKeys, m);
  m.activation = activation_field(r, "hidden_act");
  m.norm = enum_field(r, "norm", kNormNames);
  m.position_embedding = enum_field(r, "position_embedding", kPositionEmbeddingNames);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.qkv_bias = r.boolean_or("qkv_bias", false);
  m.out_bias = r.boolean_or("out_bias", false);
  m.mlp_bias = r.boolean_or("mlp_bias", false);
  m.moe = read_moe(r, m.ffn_hidden);
  r.reject_unknown();
  validate_model(m, file);
  return m;
}

nlohmann::json model_to_json(const Model& m) {
  nlohmann::json j = {
      {"name", m.name},
      {"num_hidden_layers", m.num_layers},
      {"hidden_size", m.hidden},
      {"num_attention_heads", m.num_heads},
      {"num_key_value_heads", m.num_kv_heads},
      {"head_dim", m.head_dim},
      {"intermediate_size", m.ffn_hidden},
      {"vocab_size", m.vocab},
      {"max_position_embeddings", m.max_seq},
      {"hidden_act", enum_name(m.activation, kActivationNames)},
      {"norm", enum_name(m.norm, kNormNames)},
      {"position_embedding", enum_name(m.position_embedding, kPositionEmbeddingNames)},
      {"tie_word_embeddings", m.tied_embeddings},
      {"qkv_bias", m.qkv_bias},
      {"out_bias", m.out_bias},
      {"mlp_bias", m.mlp_bias},
  };
  if (m.is_moe()) {
    j["num_local_experts"] = m.moe.num_experts;
    j["num_experts_per_tok"] = m.moe.top_k;
    j["moe_intermediate_size"] = m.moe.expert_ffn_hidden;
    j["moe_layer_freq"] = m.moe.layer_freq;
  }
  return j;
}

}  // namespace shardplan
