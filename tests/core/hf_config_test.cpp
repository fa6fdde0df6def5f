// Hugging Face config.json files as published: each reads to the matching preset or to its
// published size, and keys outside the read set and the skip list are errors.
#include "tests/core/model_files.h"

namespace shardplan {
namespace {

using nlohmann::json;
using test::hf_config_path;
using test::load_file;
using test::preset_path;
using test::read_error;

json hf_config(const std::string& repo) {
  return read_json_file(hf_config_path(repo));
}

TEST_CASE("Hugging Face configs read to the matching presets", "[model]") {
  const std::pair<const char*, const char*> pairs[] = {
      {"Llama-2-7b-hf", "llama2-7b"},
      {"Meta-Llama-3-70B", "llama3-70b"},
      {"Mixtral-8x7B-v0.1", "mixtral-8x7b"},
  };
  for (const auto& [repo, preset] : pairs) {
    INFO(repo << " vs " << preset);
    Model hf = load_file(hf_config_path(repo));
    CHECK(hf.name == repo);  // named after its folder
    const Model ours = load_file(preset_path(preset));
    const ParamCounts a = count_parameters(hf), b = count_parameters(ours);
    CHECK(a.total() == b.total());
    CHECK(a.active == b.active);
    hf.name = ours.name;
    CHECK(hf == ours);
  }
}

TEST_CASE("Hugging Face configs of other families match their published sizes", "[model]") {
  // GPT-2 small (Radford et al. 2019): 124,439,808 parameters with the tied head.
  const Model gpt2 = load_file(hf_config_path("gpt2"));
  CHECK(count_parameters(gpt2).total() == 124'439'808);
  CHECK(gpt2.ffn_hidden == 4 * 768);  // n_inner absent
  CHECK(gpt2.max_seq == 1024);
  CHECK(gpt2.tied_embeddings);
  CHECK((gpt2.qkv_bias && gpt2.out_bias && gpt2.mlp_bias));
  CHECK(gpt2.position_embedding == PositionEmbedding::learned);

  // GPT-NeoX-20B (Black et al. 2022): 20.55e9 with the untied embed_out.
  const Model neox = load_file(hf_config_path("gpt-neox-20b"));
  CHECK(static_cast<double>(count_parameters(neox).total()) == Approx(20.55e9).epsilon(0.01));
  CHECK(neox.position_embedding == PositionEmbedding::rope);
  CHECK(neox.norm == Norm::layernorm);
  CHECK_FALSE(neox.tied_embeddings);

  // Qwen2-7B: 7.62e9 (Hugging Face hub count); biases on q, k, v only.
  const Model qwen = load_file(hf_config_path("Qwen2-7B"));
  CHECK(static_cast<double>(count_parameters(qwen).total()) == Approx(7.62e9).epsilon(0.01));
  CHECK(qwen.qkv_bias);
  CHECK_FALSE(qwen.out_bias);
  CHECK(qwen.num_kv_heads == 4);

  // Mistral 7B (Jiang et al. 2023): 7.24e9 (Hugging Face hub count).
  const Model mistral = load_file(hf_config_path("Mistral-7B-v0.1"));
  CHECK(static_cast<double>(count_parameters(mistral).total()) == Approx(7.24e9).epsilon(0.01));
  CHECK(mistral.activation == Activation::swiglu);
}

TEST_CASE("Hugging Face configs: nulls and optional shape keys", "[model]") {
  json gpt2 = hf_config("gpt2");
  gpt2["n_inner"] = nullptr;
  CHECK(model_from_json(gpt2, "gpt2/config.json").ffn_hidden == 3072);
  gpt2["n_inner"] = 2048;
  CHECK(model_from_json(gpt2, "gpt2/config.json").ffn_hidden == 2048);

  json llama = hf_config("Llama-2-7b-hf");
  llama["head_dim"] = nullptr;
  CHECK(model_from_json(llama, "config.json").head_dim == 128);
  CHECK(model_from_json(llama, "config.json").name == "llama");  // no folder: the model_type
  llama["attention_bias"] = true;
  llama["mlp_bias"] = true;
  const Model biased = model_from_json(llama, "config.json");
  CHECK((biased.qkv_bias && biased.out_bias && biased.mlp_bias));
}

TEST_CASE("Hugging Face configs: unknown keys and model types are errors", "[model]") {
  json llama = hf_config("Llama-2-7b-hf");
  llama["num_shared_experts"] = 2;
  const InputError unknown = read_error(llama, "Llama-2-7b-hf/config.json");
  CHECK(unknown.file == "Llama-2-7b-hf/config.json");
  CHECK(unknown.field == "num_shared_experts");
  CHECK_THAT(unknown.reason, Catch::Contains("llama"));
  CHECK_THAT(unknown.hint,
             Catch::Contains("kHfShapeFreeKeys") && Catch::Contains("core/hf_config.cpp"));

  json falcon = hf_config("Llama-2-7b-hf");
  falcon["model_type"] = "falcon";
  const InputError type = read_error(falcon, "config.json");
  CHECK(type.field == "model_type");
  CHECK_THAT(type.reason, Catch::Contains("\"falcon\""));
  CHECK_THAT(type.hint, Catch::Contains("llama, mistral, mixtral, qwen2, gpt2, gpt_neox"));
  CHECK(hf_model_types() == "llama, mistral, mixtral, qwen2, gpt2, gpt_neox");

  // Without its model_type it would read as shardplan's JSON, whose first missing field said
  // nothing of the cause.
  json untyped = hf_config("Llama-2-7b-hf");
  untyped.erase("model_type");
  const InputError missing = read_error(untyped, "config.json");
  CHECK(missing.field == "model_type");
  CHECK_THAT(missing.reason, Catch::Contains("Hugging Face config.json"));
}

TEST_CASE("Hugging Face configs: errors use the family's field names", "[model]") {
  json gpt2 = hf_config("gpt2");
  gpt2["n_head"] = 5;
  CHECK(describe(read_error(gpt2, "gpt2/config.json")) ==
        "gpt2/config.json: n_head: 5 does not divide n_embd=768");
  gpt2["n_head"] = 12;
  gpt2["n_layer"] = 0;
  CHECK(describe(read_error(gpt2, "gpt2/config.json")) ==
        "gpt2/config.json: n_layer: must be positive, found 0");
  gpt2["n_layer"] = 12;
  gpt2["n_embd"] = "768";
  CHECK(read_error(gpt2, "gpt2/config.json").field == "n_embd");

  json mixtral = hf_config("Mixtral-8x7B-v0.1");
  mixtral["num_experts_per_tok"] = 9;
  CHECK(describe(read_error(mixtral, "config.json")) ==
        "config.json: num_experts_per_tok: 9 exceeds num_local_experts=8");
  mixtral["num_experts_per_tok"] = 2;
  mixtral["num_key_value_heads"] = 6;
  CHECK(read_error(mixtral, "config.json").field == "num_key_value_heads");
}

TEST_CASE("Hugging Face configs: activations must fit the family's MLP", "[model]") {
  json llama = hf_config("Llama-2-7b-hf");
  llama["hidden_act"] = "gelu";
  const InputError gated = read_error(llama, "config.json");
  CHECK(gated.field == "hidden_act");
  CHECK_THAT(gated.reason, Catch::Contains("gated"));

  json gpt2 = hf_config("gpt2");
  gpt2["activation_function"] = "silu";
  CHECK_THAT(read_error(gpt2, "config.json").reason, Catch::Contains("not gated"));
  gpt2["activation_function"] = "relu";
  CHECK_THAT(read_error(gpt2, "config.json").reason,
             Catch::Contains("unknown activation \"relu\""));
  gpt2["activation_function"] = "gelu";
  gpt2["add_cross_attention"] = true;
  CHECK(read_error(gpt2, "config.json").field == "add_cross_attention");
}

}  // namespace
}  // namespace shardplan
