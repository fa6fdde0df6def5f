// Each set's reader against its file: every row either priced or refused with a reason (the
// file's own row count), and one known row's layout and model as the file prints them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "core/json_reader.h"
#include "core/stage_split.h"
#include "validate/pricing.h"
#include "validate/sets.h"
#include "validate/validate_report.h"

using namespace shardplan;

namespace {

const std::string kFolder = std::string(SHARDPLAN_SOURCE_DIR) + "/data/fidelity";

FidelitySet read(const std::string& name) {
  return read_set(find_set(name), kFolder);
}

// The row count the file states in `counts` (rows, or the Ultra-Scale file's entries).
size_t stated_rows(const std::string& name) {
  const nlohmann::json j = read_json_file(kFolder + "/" + find_set(name).file);
  const auto& counts = j.at("counts");
  return counts.contains("rows") ? counts.at("rows").get<size_t>()
                                 : counts.at("entries").get<size_t>();
}

// Priced and refused rows add up to the file's count; returns the refused.
size_t check_every_row_accounted(const std::string& name) {
  const FidelitySet s = read(name);
  const std::vector<PricedRow> priced = price_set(s);
  REQUIRE(s.rows.size() == stated_rows(name));
  REQUIRE(priced.size() == s.rows.size());
  size_t refused = 0, scored = 0;
  for (const auto& p : priced) (p.refusal.empty() ? scored : refused)++;
  CHECK(scored + refused == stated_rows(name));
  return refused;
}

}  // namespace

TEST_CASE("vtrain: every row priced, row 0 as the file prints it", "[readers]") {
  CHECK(check_every_row_accounted("vtrain_single_a100") == 0);
  const FidelityRow r = read("vtrain_single_a100").rows.at(0);
  // {"gpus": 2, "global_batch": 16, "micro_batch": 8, "hidden": 1024, "heads": 16, "layers": 24,
  //  "seq": 1024, "tp": 1, "dp": 1, "pp": 2, "iteration_time_ms": 372.160408}
  CHECK(r.cluster.world() == 2);
  CHECK(r.layout.tp == 1);
  CHECK(r.layout.pp == 2);
  CHECK(r.layout.dp == 1);
  CHECK(r.layout.micro_batch == 8);
  CHECK(r.layout.num_microbatches == 2);
  CHECK(r.layout.recompute == Recompute::full);
  CHECK(r.model.hidden == 1024);
  CHECK(r.model.num_layers == 24);
  CHECK(r.model.num_heads == 16);
  CHECK(r.model.ffn_hidden == 4096);
  CHECK(r.model.vocab == 50304);  // 50257 padded to a multiple of 128 · tp
  CHECK(r.training.dtype == Dtype::fp16);
  CHECK(*r.measured_step_time_s == Approx(0.372160408));
}

TEST_CASE("bloom: every row accounted, the 200B 10-node row", "[readers]") {
  CHECK(check_every_row_accounted("bloom_chronicles") >= 7);  // 7 rows have layers unknown
  const FidelityRow r = read("bloom_chronicles").rows.at(1);
  CHECK(r.cluster.nodes == 10);
  CHECK(r.layout.tp == 8);
  CHECK(r.layout.pp == 10);
  CHECK(r.layout.dp == 1);
  CHECK(r.layout.zero == 1);
  CHECK(r.layout.num_microbatches == 2048);
  CHECK(r.model.hidden == 14400);
  CHECK(r.model.num_layers == 80);
  CHECK(r.model.num_heads == 96);
  CHECK(r.model.vocab == 250880);
  CHECK(r.model.position_embedding == PositionEmbedding::rope);  // ALiBi: no position parameters
  CHECK(*r.measured_step_time_s == Approx(844.81));
  CHECK(*r.measured_memory_bytes == Approx(73.0 * (1 << 30)));
  CHECK(r.ran);
}

TEST_CASE("ultrascale: every row accounted, the first 1B row", "[readers]") {
  check_every_row_accounted("ultrascale_dev");
  const FidelityRow r = read("ultrascale_dev").rows.at(0);
  // ["1B", 1 node, mbs 2, grad_acc 16, gbs 256, dp 8, pp 1, tp 1, zero 0, ..., 40150 tok/s/GPU]
  CHECK(r.cluster.world() == 8);
  CHECK(r.layout.dp == 8);
  CHECK(r.layout.micro_batch == 2);
  CHECK(r.layout.num_microbatches == 16);
  CHECK(r.model.num_layers == 16);
  CHECK(r.model.hidden == 2048);
  CHECK(r.model.ffn_hidden == 8192);
  CHECK(r.model.tied_embeddings);
  CHECK(r.training.grad_dtype == Dtype::fp32);
  CHECK(*r.measured_step_time_s == Approx(256.0 * 4096 / (40150.0 * 8)));
  CHECK(*r.measured_memory_bytes == Approx(50.2 * (1 << 30)));
}

TEST_CASE("nemo: every row accounted, the dense rows on described systems priced in FP8",
          "[readers]") {
  // 259 refused: MoE models without a preset, NVFP4, unstated precision, GB300/B300, TFLOP/s-only
  // tables, no vocabulary, expert parallelism folded over tp.
  CHECK(check_every_row_accounted("nemo_performance") == 259);
  const FidelitySet s = read("nemo_performance");
  // GPT3-5B: no preset has its dimensions, so its vocabulary is unknown.
  CHECK(s.rows.at(0).refused ==
        "vocabulary size not in the set, and no model preset has these dimensions");
  // LLAMA2-7B, FP8 on 8 H100: {"gpus": 8, "gbs": 128, "mbs": 1, "seq": 4096, "tp": 1, ...,
  //  "tokens_per_s_per_gpu": 16934}.
  const FidelityRow& llama2 = s.rows.at(4);
  CHECK(llama2.refused.empty());
  CHECK(llama2.model.name == "llama2-7b");
  CHECK(llama2.training.fp8 == Fp8Recipe::delayed);
  CHECK(llama2.layout.dp == 8);
  CHECK(llama2.layout.zero == 1);
  CHECK(llama2.layout.num_microbatches == 16);
  CHECK(*llama2.measured_step_time_s == Approx(128.0 * 4096 / (16934.0 * 8)));
  // LLAMA3_70B: Llama 2 70B has its dimensions too; the name picks Llama 3's vocabulary.
  const FidelityRow& llama3 = s.rows.at(98);
  CHECK(llama3.model.name == "llama3-70b");
  CHECK(llama3.layout.vpp == 5);
  CHECK(llama3.layout.schedule == Schedule::interleaved);
  CHECK(llama3.layout.sequence_parallel);
  // LLAMA3.1 405B over 8 × 8 virtual stages: the embedding and the loss count as a layer each.
  const FidelityRow& llama405 = s.rows.at(67);
  REQUIRE(llama405.layout.stages.size() == 64);
  CHECK(llama405.layout.stages.front() == 1);
  CHECK(llama405.layout.stages.back() == 1);
  // Qwen3_30B_a3B, MXFP8 on a GB200's 8 GPUs: no dimensions in the set, the preset of its name.
  const FidelityRow& qwen = s.rows.at(36);
  CHECK(qwen.refused.empty());
  CHECK(qwen.model.name == "qwen3-30b-a3b");
  CHECK(qwen.model.moe.num_experts == 128);
  CHECK(qwen.layout.ep == 8);
  CHECK(qwen.training.fp8 == Fp8Recipe::mxfp8);
  // DeepSeek-V3 (on GB200): its multi-head latent attention has no preset.
  CHECK_THAT(s.rows.at(30).refused, Catch::Matchers::Contains("nor a model preset of its name"));
  CHECK(s.rows.at(270).training.fp8 == Fp8Recipe::current);  // FP8-CS
  CHECK(s.rows.at(271).training.fp8 == Fp8Recipe::mxfp8);    // FP8-MX on B200
}

TEST_CASE("mosaicml: every row accounted, the 70B 512-GPU row", "[readers]") {
  CHECK(check_every_row_accounted("mosaicml_benchmarks") == 0);
  const FidelitySet s = read("mosaicml_benchmarks");
  // The H100 FP8 table (amp_fp8): Transformer Engine's delayed scaling.
  CHECK(std::ranges::count_if(s.rows, [](const FidelityRow& row) {
          return row.training.fp8 == Fp8Recipe::delayed;
        }) == 7);
  const FidelityRow r = s.rows.at(0);
  CHECK(r.cluster.nodes == 64);
  CHECK(r.cluster.device.name == "H100-SXM5-80GB");
  CHECK(r.layout.dp == 512);
  CHECK(r.layout.zero == 3);
  CHECK(r.layout.micro_batch == 8);
  CHECK(r.layout.recompute == Recompute::full);
  CHECK(r.model.hidden == 8192);
  CHECK(r.model.num_layers == 80);
  CHECK(*r.measured_step_time_s == Approx(4096.0 * 2048 / 515636));
}

TEST_CASE("validate --rows: each row beside its prediction, or why it was refused", "[readers]") {
  const FidelitySet s = read("mosaicml_benchmarks");
  const std::vector<PricedRow> priced = price_set(s, 1);
  const nlohmann::json rows = rows_to_json(s, priced);
  REQUIRE(rows.size() == s.rows.size());
  int refused = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    CHECK(j.at("row") == s.rows[i].id);
    if (j.contains("refused")) {
      ++refused;
      CHECK(!j.contains("predicted_step_time_s"));
      continue;
    }
    const double measured = j.at("measured_step_time_s");
    const double predicted = j.at("predicted_step_time_s");
    CHECK(predicted == priced[i].step_time_s);
    CHECK(j.at("step_time_error").get<double>() == Approx(predicted / measured - 1));
  }
  CHECK(refused == 0);
  CHECK(rows[0].at("layout").get<std::string>().find("dp=512") != std::string::npos);
}

TEST_CASE("an unknown set is an error naming the choices", "[readers]") {
  CHECK_THROWS_AS(find_set("vtrain"), InputError);
}

TEST_CASE("bloom: stages that pp does not divide, as DeepSpeed partitions them", "[readers]") {
  const FidelitySet s = read("bloom_chronicles");
  const auto first = [&](int layers, bool bf16) {
    for (const FidelityRow& r : s.rows)
      if (r.model.num_layers == layers && r.layout.pp == 12 &&
          (r.training.dtype == Dtype::bf16) == bf16)
        return r;
    FAIL("no row of " << layers << " layers over 12 stages");
    return FidelityRow{};
  };
  // 02-28, --pp-partition-method 'type:transformer|embedding': (70 + 2) / 12 = 6 a stage, the
  // embedding one of them on each end; and DeepSpeed's BF16 optimizer's fp32 accumulation.
  const FidelityRow typed = first(70, true);
  CHECK(typed.layout.stages == std::vector<int>{5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5});
  CHECK(typed.training.grad_dtype == Dtype::fp32);
  // 02-26, DeepSpeed's default 'parameters': the ends also hold the tied embedding's V·h
  // weights, worth head_layers of a layer's, so they take fewer layers.
  const FidelityRow parameters = first(78, false);
  const int ends = head_layers(parameters.model);
  CHECK(parameters.layout.stages == balanced_split(78, 12, ends, ends));
  CHECK(parameters.layout.stages.front() < parameters.layout.stages[5]);
  CHECK(parameters.training.grad_dtype != Dtype::fp32);
}
