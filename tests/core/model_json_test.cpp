// Our model JSON: defaults, aliases, and every error naming the file, the field and the reason.
#include <string>
#include <vector>

#include "tests/core/model_files.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using nlohmann::json;
using test::read_error;
using shardplan::testing::thrown_input_error;

// A valid Llama-like description to break one field at a time.
json base() {
  return json{
      {"name", "llama"},           {"num_hidden_layers", 32},         {"hidden_size", 4096},
      {"num_attention_heads", 32}, {"num_key_value_heads", 8},        {"intermediate_size", 14336},
      {"vocab_size", 128256},      {"max_position_embeddings", 8192}, {"hidden_act", "swiglu"},
      {"norm", "rmsnorm"},         {"position_embedding", "rope"}};
}

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}

// The error's file, field and reason, and the whole line as the CLI prints it.
void check_error(const InputError& e, const std::string& field, const std::string& reason) {
  CHECK(e.file == "llama.json");
  CHECK(e.field == field);
  CHECK_THAT(e.reason, Catch::Contains(reason));
  CHECK_THAT(describe(e), Catch::StartsWith("llama.json: " + field + ": "));
}

TEST_CASE("our JSON: defaults for optional fields", "[model]") {
  json j = base();
  j.erase("num_key_value_heads");
  j.erase("name");
  const Model m = model_from_json(j, "models/mine.json");
  CHECK(m.name == "mine");  // the file's stem
  CHECK(m.num_kv_heads == 32);
  CHECK(m.head_dim == 128);
  CHECK_FALSE(m.tied_embeddings);
  CHECK_FALSE(m.qkv_bias);
  CHECK_FALSE(m.is_moe());
  CHECK(m.moe == Moe{});

  const Model moe = model_from_json(
      with(with(base(), "num_local_experts", 8), "num_experts_per_tok", 2), "x.json");
  CHECK(moe.moe.expert_ffn_hidden == 14336);  // intermediate_size
  CHECK(moe.moe.layer_freq == 1);
}

TEST_CASE("our JSON: head_dim given need not split hidden_size", "[model]") {
  // Gemma-7B-like: 16 heads of 256 over hidden 3072.
  json j =
      with(with(with(base(), "hidden_size", 3072), "num_attention_heads", 16), "head_dim", 256);
  j["num_key_value_heads"] = 16;
  const Model m = model_from_json(j, "llama.json");
  CHECK(m.head_dim == 256);
  CHECK(attention_params_per_layer(m) == 4 * 3072 * 16 * 256);
}

TEST_CASE("our JSON: Hugging Face activation names", "[model]") {
  CHECK(model_from_json(with(base(), "hidden_act", "silu"), "x.json").activation ==
        Activation::swiglu);
  for (const char* gelu : {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"})
    CHECK(model_from_json(with(base(), "hidden_act", gelu), "x.json").activation ==
          Activation::gelu);
  const InputError e = read_error(with(base(), "hidden_act", "relu"), "llama.json");
  check_error(e, "hidden_act", "unknown activation \"relu\"");
  CHECK_THAT(e.hint, Catch::Contains("swiglu") && Catch::Contains("gelu_new"));
}

TEST_CASE("our JSON: shape errors name file, field and reason", "[model]") {
  const InputError kv = read_error(with(base(), "num_key_value_heads", 6), "llama.json");
  CHECK(describe(kv) ==
        "llama.json: num_key_value_heads: 6 does not divide num_attention_heads=32");

  const InputError heads = read_error(with(base(), "hidden_size", 4100), "llama.json");
  check_error(heads, "num_attention_heads", "32 does not divide hidden_size=4100");
  CHECK_THAT(heads.hint, Catch::Contains("head_dim"));

  json moe = with(with(base(), "num_local_experts", 8), "num_experts_per_tok", 9);
  check_error(read_error(moe, "llama.json"), "num_experts_per_tok",
              "9 exceeds num_local_experts=8");
  check_error(read_error(with(moe, "num_experts_per_tok", 0), "llama.json"), "num_experts_per_tok",
              "must be positive, found 0");
  check_error(
      read_error(with(with(moe, "num_experts_per_tok", 2), "moe_layer_freq", 33), "llama.json"),
      "moe_layer_freq", "33 exceeds num_hidden_layers=32");
  check_error(read_error(with(with(moe, "num_experts_per_tok", 2), "moe_intermediate_size", 0),
                         "llama.json"),
              "moe_intermediate_size", "must be positive, found 0");
  check_error(read_error(with(base(), "num_local_experts", -1), "llama.json"), "num_local_experts",
              "must not be negative, found -1");

  // Expert settings on a dense model.
  check_error(read_error(with(base(), "num_experts_per_tok", 2), "llama.json"),
              "num_experts_per_tok", "is 2 but the model has no experts");
  check_error(read_error(with(base(), "moe_layer_freq", 2), "llama.json"), "moe_layer_freq",
              "given but the model has no experts");
  check_error(read_error(with(base(), "num_local_experts", 8), "llama.json"), "num_experts_per_tok",
              "missing required field");
}

TEST_CASE("our JSON: zero and negative sizes", "[model]") {
  for (const char* field :
       {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
        "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings"}) {
    for (int bad : {0, -4}) {
      INFO(field << " = " << bad);
      check_error(read_error(with(base(), field, bad), "llama.json"), field,
                  "must be positive, found " + std::to_string(bad));
    }
  }
}

TEST_CASE("our JSON: unknown keys, missing keys, wrong types, bad names", "[model]") {
  const InputError unknown = read_error(with(base(), "hidden_sise", 4096), "llama.json");
  check_error(unknown, "hidden_sise", "unknown field");
  CHECK_THAT(unknown.hint, Catch::Contains("hidden_size") && Catch::Contains("head_dim") &&
                               Catch::Contains("moe_layer_freq"));

  json missing = base();
  missing.erase("vocab_size");
  check_error(read_error(missing, "llama.json"), "vocab_size", "missing required field");

  check_error(read_error(with(base(), "hidden_size", "4096"), "llama.json"), "hidden_size",
              "expected an integer, found string");
  check_error(read_error(with(base(), "num_hidden_layers", 40.5), "llama.json"),
              "num_hidden_layers", "expected an integer");
  check_error(read_error(with(base(), "num_hidden_layers", 1e10), "llama.json"),
              "num_hidden_layers", "out of range");
  check_error(read_error(with(base(), "tie_word_embeddings", "yes"), "llama.json"),
              "tie_word_embeddings", "expected true or false");
  check_error(read_error(with(base(), "norm", "batchnorm"), "llama.json"), "norm",
              "unknown value \"batchnorm\"");
  check_error(read_error(with(base(), "position_embedding", "alibi"), "llama.json"),
              "position_embedding", "unknown value \"alibi\"");
  CHECK(read_error(json::array(), "llama.json").file == "llama.json");
  // 4096.0 is an integer written as a float.
  CHECK(model_from_json(with(base(), "hidden_size", 4096.0), "x.json").hidden == 4096);
}

TEST_CASE("validate_model on a built model", "[model]") {
  Model m = model_from_json(base(), "llama.json");
  validate_model(m, "llama.json");  // valid
  m.moe.num_experts = 0;
  m.moe.top_k = 1;
  CHECK_THROWS_AS(validate_model(m, "llama.json"), InputError);
  m.moe.top_k = 0;
  auto error_of = [&] { return describe(thrown_input_error([&] { validate_model(m, "built"); })); };
  m.num_layers = 4097;
  CHECK(error_of() == "built: num_hidden_layers: 4097 is above the 4096 layers shardplan plans for");
  m.num_layers = 32;
  m.head_dim = 0;
  CHECK(error_of() == "built: head_dim: must be positive, found 0");
  m.head_dim = 128;
  // Past the widths shardplan plans for, before any count overflows (a fuzzed config.json's
  // n_positions of 10^18 overflowed the position embedding's parameters).
  m.max_seq = 1'000'000'000'000'000'024;
  CHECK(error_of() ==
        "built: max_position_embeddings: 1000000000000000024 is above the 1073741824 shardplan "
        "plans for");
  m.max_seq = 8192;
  m.num_heads = 1 << 19;
  m.num_kv_heads = 1 << 19;
  CHECK(error_of() == "built: head_dim: 67108864 is above the 1048576 shardplan plans for");
  m.num_heads = m.num_kv_heads = 32;
  m.moe = {.num_experts = 1 << 12, .top_k = 2, .expert_ffn_hidden = 4096, .layer_freq = 1};
  CHECK(error_of() ==
        "built: moe_intermediate_size: 16777216 is above the 4194304 shardplan plans for");
}

}  // namespace
}  // namespace shardplan
