#include "core/model_fields.h"

#include <array>
#include <limits>
#include <utility>

namespace shardplan {

namespace {

// Hugging Face's names for the two MLP kinds we model (transformers' ACT2FN keys). In Llama-style
// models "silu" drives a gated MLP (gate, up, down), which is what we call swiglu; the GELU
// variants differ only in the approximation and share the two-matrix MLP.
constexpr std::array<std::pair<std::string_view, Activation>, 4> kHfActivationAliases{{
    {"silu", Activation::swiglu},
    {"gelu_new", Activation::gelu},
    {"gelu_pytorch_tanh", Activation::gelu},
    {"gelu_fast", Activation::gelu},
}};

// Present and not null; an absent key is still recorded as accepted, for the unknown-key hint.
bool given(ObjectReader& r, std::string_view key) {
  if (key.empty()) return false;
  if (!r.has(key)) {
    r.integer_or(key, 0);  // records the key
    return false;
  }
  return !r.raw(key).is_null();  // raw() marks a null as read
}

int64_t head_dim_field(ObjectReader& r, const SizeKeys& keys, int64_t hidden, int64_t heads) {
  if (given(r, keys.head_dim)) return r.integer(keys.head_dim);
  if (hidden <= 0 || heads <= 0) return 0;  // validate_model names the size that is wrong
  if (hidden % heads != 0)
    r.fail(keys.heads, fmt::format("{} does not divide {}={}", heads, keys.hidden, hidden),
           keys.head_dim.empty() ? std::string("the heads must split the hidden size evenly")
                                 : fmt::format("give {} when the heads do not split {} evenly",
                                               keys.head_dim, keys.hidden));
  return hidden / heads;
}

}  // namespace

std::optional<Activation> activation_from_name(std::string_view name) {
  if (auto v = enum_from_name(name, kActivationNames)) return v;
  for (const auto& [alias, activation] : kHfActivationAliases)
    if (alias == name) return activation;
  return std::nullopt;
}

std::string activation_choices() {
  std::string out = enum_choices(kActivationNames);
  for (const auto& [alias, activation] : kHfActivationAliases)
    out += fmt::format(" | {} ({})", alias, enum_name(activation, kActivationNames));
  return out;
}

void read_sizes(ObjectReader& r, const SizeKeys& keys, Model& m) {
  m.num_layers = int_field(r, keys.layers);
  m.hidden = r.integer(keys.hidden);
  m.num_heads = int_field(r, keys.heads);
  m.num_kv_heads =
      keys.kv_heads.empty() ? m.num_heads : int_field_or(r, keys.kv_heads, m.num_heads);
  m.head_dim = head_dim_field(r, keys, m.hidden, m.num_heads);
  const bool ffn_defaults = keys.ffn_per_hidden > 0 && !given(r, keys.ffn);
  m.ffn_hidden = ffn_defaults ? keys.ffn_per_hidden * m.hidden : r.integer(keys.ffn);
  m.vocab = r.integer(keys.vocab);
  m.max_seq = r.integer(keys.positions);
}

Activation activation_field(ObjectReader& r, std::string_view key) {
  const std::string name = r.string(key);
  if (auto v = activation_from_name(name)) return *v;
  r.fail(key, fmt::format("unknown activation \"{}\"", name), "one of: " + activation_choices());
}

Activation activation_field_or(ObjectReader& r, std::string_view key, Activation fallback) {
  if (r.has(key)) return activation_field(r, key);
  r.string_or(key, "");  // records the key as accepted
  return fallback;
}

}  // namespace shardplan
