// Field readers shared by the two model formats (our JSON in model_json.cpp, Hugging Face configs
// in hf_config.cpp): the size keys, the head_dim default, activation names.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string_view>

#include "core/enum_names.h"
#include "core/json_reader.h"
#include "core/model.h"

namespace shardplan {

// The names a format gives to the sizes every model has. An empty kv_heads or head_dim: the format
// has no such key, so kv heads = heads and head_dim = hidden / heads.
struct SizeKeys {
  std::string_view layers = "num_hidden_layers";
  std::string_view hidden = "hidden_size";
  std::string_view heads = "num_attention_heads";
  std::string_view kv_heads = "num_key_value_heads";
  std::string_view head_dim = "head_dim";
  std::string_view ffn = "intermediate_size";
  std::string_view vocab = "vocab_size";
  std::string_view positions = "max_position_embeddings";
  int64_t ffn_per_hidden = 0;  // when ffn is absent or null: this × hidden (GPT-2: 4); 0: required
};
inline constexpr SizeKeys kSizeKeys{};  // our JSON's names, shared by the Llama-style families

// Reads layers, hidden, heads, kv heads (default: heads), head_dim (given and not null, else
// hidden / heads, which must divide exactly), the MLP width, vocabulary and positions into `m`.
// A key whose value is null counts as absent, as Hugging Face writes unset options.
// Sizes are not checked for sign here: validate_model does that with the rest of the shape.
void read_sizes(ObjectReader& r, const SizeKeys& keys, Model& m);

// Any name activation_from_name accepts.
Activation activation_field(ObjectReader& r, std::string_view key);
Activation activation_field_or(ObjectReader& r, std::string_view key, Activation fallback);

}  // namespace shardplan
