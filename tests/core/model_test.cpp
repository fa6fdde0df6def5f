// Parameter counts: exact by hand for small models, published sizes for the presets, and the
// round trip of every preset through model_to_json.
#include <filesystem>

#include "tests/core/model_files.h"

namespace shardplan {
namespace {

using test::load_file;
using test::preset_path;

// Published sizes, checked within 1%: the counts include embeddings and the LM head.
void check_published(const std::string& preset, double published, double tolerance = 0.01) {
  const double total =
      static_cast<double>(count_parameters(load_file(preset_path(preset))).total());
  INFO(preset << ": " << total << " parameters, published " << published);
  CHECK(total == Approx(published).epsilon(tolerance));
}

// hidden 8, 4 heads of 2 sharing 2 key/value heads, SwiGLU, RMSNorm, RoPE, untied, q/k/v bias.
Model small_gqa() {
  Model m;
  m.name = "small-gqa";
  m.num_layers = 3;
  m.hidden = 8;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 2;
  m.ffn_hidden = 16;
  m.vocab = 10;
  m.max_seq = 32;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  m.qkv_bias = true;
  return m;
}

TEST_CASE("gpt-tiny's parameters, component by component", "[model]") {
  const Model m = load_file(preset_path("gpt-tiny"));
  const ParamCounts c = count_parameters(m);
  // vocab 256, hidden 64, 4 layers, 4 heads, ffn 256, 64 positions; biases everywhere; tied.
  CHECK(c.embedding == 256 * 64);
  CHECK(c.position_embedding == 64 * 64);
  CHECK(attention_params_per_layer(m) == 4 * 64 * 64 + 3 * 64 + 64);  // q, k, v, o + biases
  CHECK(c.attention == 4 * (4 * 64 * 64 + 4 * 64));
  CHECK(mlp_params_per_layer(m) == 64 * 256 + 256 * 64 + 256 + 64);
  CHECK(c.mlp == 4 * (2 * 64 * 256 + 256 + 64));
  CHECK(norm_params(m) == 2 * 64);
  CHECK(norm_params_per_layer(m) == 4 * 64);
  CHECK(c.norms == 4 * (2 * 2 * 64) + 2 * 64);
  CHECK(c.head == 0);
  CHECK(c.experts == 0);
  CHECK(c.router == 0);
  CHECK(expert_params_per_layer(m) == 0);
  CHECK(c.total() == 16384 + 4096 + 66560 + 132352 + 1152);
  CHECK(c.total() == 220544);
  CHECK(c.active == c.total());
}

TEST_CASE("grouped-query attention, SwiGLU, RMSNorm and an untied head", "[model]") {
  const Model m = small_gqa();
  const ParamCounts c = count_parameters(m);
  // q 8×8, k 8×4, v 8×4, o 8×8; q/k/v biases 8 + 4 + 4; no output bias.
  CHECK(attention_params_per_layer(m) == 64 + 32 + 32 + 64 + 16);
  CHECK(mlp_params_per_layer(m) == 3 * 8 * 16);  // gate, up, down
  CHECK(norm_params_per_layer(m) == 2 * 8);      // weight only
  CHECK(c.embedding == 80);
  CHECK(c.position_embedding == 0);
  CHECK(c.head == 80);
  CHECK(c.norms == 3 * 16 + 8);
  CHECK(c.total() == 80 + 3 * 208 + 3 * 384 + 56 + 80);

  Model biased = m;
  biased.out_bias = biased.mlp_bias = true;
  CHECK(attention_params_per_layer(biased) == 208 + 8);
  CHECK(mlp_params_per_layer(biased) == 384 + 16 + 16 + 8);  // gate and up: 16 each, down: 8
}

TEST_CASE("experts on every other layer: experts, router and active parameters", "[model]") {
  Model m = small_gqa();
  m.num_layers = 4;
  m.activation = Activation::gelu;
  m.qkv_bias = false;
  m.moe = Moe{.num_experts = 4, .top_k = 2, .expert_ffn_hidden = 6, .layer_freq = 2};
  CHECK_FALSE(m.is_moe_layer(0));
  CHECK(m.is_moe_layer(1));
  CHECK_FALSE(m.is_moe_layer(2));
  CHECK(m.is_moe_layer(3));
  const ParamCounts c = count_parameters(m);
  CHECK(expert_params_per_layer(m) == 2 * 8 * 6);
  CHECK(c.mlp == 2 * (2 * 8 * 16));  // the two dense layers
  CHECK(c.experts == 2 * 4 * 96);    // two MoE layers of four experts
  CHECK(c.router == 2 * 8 * 4);
  CHECK(c.active == c.total() - 2 * (4 - 2) * 96);
}

TEST_CASE("presets match their published sizes", "[model]") {
  // Touvron et al. 2023 (Llama 2), the 7B checkpoint: 6.74e9 (Hugging Face hub count).
  check_published("llama2-7b", 6.74e9);
  // The Llama-2-70b-hf checkpoint holds 69.0e9 (Hugging Face hub); "70B" in the paper is rounded.
  check_published("llama2-70b", 69.0e9);
  // Meta-Llama-3-8B and -70B: 8.03e9 and 70.6e9 (Hugging Face hub counts).
  check_published("llama3-8b", 8.03e9);
  check_published("llama3-70b", 70.6e9);
  // Dubey et al. 2024 (The Llama 3 Herd of Models), Table 3: 405B.
  check_published("llama3-405b", 405e9);
  // Brown et al. 2020, Table 2.1: 175.0B.
  check_published("gpt3-175b", 175e9);
}

TEST_CASE("Mixtral 8x7B: 46.7e9 parameters, 12.9e9 active per token", "[model]") {
  // Jiang et al. 2024 (Mixtral of Experts) §1-2: 47B parameters, 13B active per token;
  // the model card gives 46.7B and 12.9B.
  const ParamCounts c = count_parameters(load_file(preset_path("mixtral-8x7b")));
  CHECK(static_cast<double>(c.total()) == Approx(46.7e9).epsilon(0.01));
  CHECK(static_cast<double>(c.active) == Approx(12.9e9).epsilon(0.01));
  CHECK(c.mlp == 0);  // every layer is sparse
  CHECK(c.router == 32 * 4096 * 8);
}

TEST_CASE("presets match the released checkpoints' tensor totals exactly", "[model]") {
  // The parameter totals the Hugging Face hub lists for the safetensors checkpoints of
  // meta-llama/Llama-2-7b-hf, meta-llama/Meta-Llama-3-8B and mistralai/Mixtral-8x7B-v0.1.
  CHECK(count_parameters(load_file(preset_path("llama2-7b"))).total() == 6'738'415'616);
  CHECK(count_parameters(load_file(preset_path("llama3-8b"))).total() == 8'030'261'248);
  CHECK(count_parameters(load_file(preset_path("mixtral-8x7b"))).total() == 46'702'792'704);
}

TEST_CASE("every preset reads back equal from model_to_json", "[model]") {
  int presets = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SHARDPLAN_SOURCE_DIR) + "/models")) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    const Model m = load_file(path);
    INFO(path);
    CHECK(m.name == entry.path().stem().string());
    CHECK(model_from_json(model_to_json(m), path) == m);
    ++presets;
  }
  CHECK(presets >= 9);
}

TEST_CASE("a hand-built model round-trips, MoE fields included", "[model]") {
  Model m = small_gqa();
  m.tied_embeddings = true;
  m.moe = Moe{.num_experts = 4, .top_k = 1, .expert_ffn_hidden = 12, .layer_freq = 3};
  const Model back = model_from_json(model_to_json(m), "small.json");
  CHECK(back == m);
  Model other = m;
  other.moe.layer_freq = 1;
  CHECK_FALSE(other == m);
}

}  // namespace
}  // namespace shardplan
