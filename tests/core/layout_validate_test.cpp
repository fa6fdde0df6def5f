// resolve_layout and validate_layout: what is derived (dp, the batch split, the schedule), the
// three input forms meeting in one Layout, and every rule with its own error.
#include <catch2/catch.hpp>

#include "core/layout.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;
using testing::thrown_input_error;

// Resolves a compact string on a model, cluster and training.
Layout resolve(std::string_view layout, const Model& m, const Cluster& c, Training t) {
  return resolve_layout(parse_layout_string(layout), m, c, t, "--layout");
}

// The error resolving `layout` gives, after checking it names the source and the field.
std::string error_for(std::string_view layout, const Model& m, const Cluster& c, const Training& t,
                      const std::string& field) {
  const InputError e = thrown_input_error([&] { resolve(layout, m, c, t); });
  CHECK(e.file == "--layout");
  CHECK(e.field == field);
  return e.what();
}

TEST_CASE("resolve: dp from the device count, micro-batches from the global batch", "[layout]") {
  Training t = test::training(1536, 4096);
  const Layout l = resolve_layout(parse_layout_string("tp=8,pp=4,mbs=2"), load_model("llama2-70b"),
                                  test::dgx_h100(128), t, "--layout");
  CHECK(l.dp == 32);                // 1024 devices / (tp 8 × pp 4 × cp 1)
  CHECK(l.num_microbatches == 24);  // 1536 / (mbs 2 × dp 32)
  CHECK(l.global_batch() == 1536);
  CHECK(l.schedule == Schedule::one_f_one_b);
  CHECK(l.zero == 0);
  CHECK(l.recompute == Recompute::none);
  CHECK(l.rank_order == kDefaultRankOrder);
  CHECK(t.global_batch == 1536);

  const Layout cp = resolve("tp=8,pp=2,cp=4", load_model("llama2-70b"), test::dgx_h100(128), t);
  CHECK(cp.dp == 16);  // 1024 / (8 × 2 × 4)
  CHECK(cp.num_microbatches == 96);
}

TEST_CASE("resolve: the layout's global batch or micro-batch count sets the training's",
          "[layout]") {
  const Model m = load_model("llama2-70b");
  const Cluster c = test::dgx_h100(128);
  Training t = test::training(1536, 4096);
  const Layout over =
      resolve_layout(parse_layout_string("tp=8,pp=4,gbs=3072"), m, c, t, "--layout");
  CHECK(over.num_microbatches == 96);  // 3072 / (1 × 32)
  CHECK(t.global_batch == 3072);

  Training none = test::training(0, 4096);
  const Layout gas =
      resolve_layout(parse_layout_string("tp=8,pp=4,mbs=2,gas=6"), m, c, none, "--layout");
  CHECK(gas.num_microbatches == 6);
  CHECK(none.global_batch == 384);  // mbs 2 × gas 6 × dp 32

  const Layout vpp = resolve("tp=8,pp=4,vpp=2", m, c, test::training(1536, 4096));
  CHECK(vpp.schedule == Schedule::interleaved);
  CHECK(vpp.num_microbatches == 48);

  Training missing = test::training(0, 4096);
  const InputError e = thrown_input_error(
      [&] { resolve_layout(parse_layout_string("tp=8"), m, c, missing, "--layout"); });
  CHECK(e.field == "layout.global_batch");
  CHECK(e.reason == "not given");
}

TEST_CASE("resolve: the compact string, Megatron-LM flags and DeepSpeed meet in one Layout",
          "[layout]") {
  const Model m = load_model("llama2-70b");
  const Cluster c = test::dgx_h100(128);
  Training t1 = test::training(1536, 4096), t2 = t1, t3 = test::training(0, 4096);
  t3.dtype = t3.grad_dtype = Dtype::fp16;

  const Layout compact = resolve_layout(
      parse_layout_string("tp=8,pp=4,zero=1,mbs=1,gbs=1536,sp=1,vpp=2,recompute=selective"), m, c,
      t1, "--layout");
  const Layout megatron = resolve_layout(
      parse_megatron_flags({"--tensor-model-parallel-size", "8", "--pp=4", "--sequence-parallel",
                            "--micro-batch-size", "1", "--global-batch-size=1536",
                            "--num-layers-per-virtual-pipeline-stage", "10",
                            "--recompute-granularity", "selective", "--zero-stage", "1"},
                           m),
      m, c, t2, "megatron flags");
  const LayoutSpec ds = layout_from_deepspeed({{"train_batch_size", 1536},
                                               {"train_micro_batch_size_per_gpu", 1},
                                               {"gradient_accumulation_steps", 48},
                                               {"zero_optimization", {{"stage", 1}}},
                                               {"bf16", {{"enabled", true}}}},
                                              "ds.json");
  const Layout deepspeed = resolve_layout(
      merge(ds, parse_megatron_flags(
                    {"--tp", "8", "--pp", "4", "--sequence-parallel",
                     "--num-layers-per-virtual-pipeline-stage=10", "--recompute-activations"},
                    m)),
      m, c, t3, "ds.json");

  CHECK(compact == megatron);
  CHECK(compact == deepspeed);
  CHECK(to_string(compact) ==
        "tp=8,pp=4,dp=32,cp=1,ep=1,zero=1,mbs=1,gbs=1536,sp=1,vpp=2,recompute=selective,"
        "schedule=interleaved,order=tp-cp-ep-dp-pp");
  CHECK(compact.num_microbatches == 48);
  CHECK(t3.global_batch == 1536);
  CHECK(t3.dtype == Dtype::bf16);
  CHECK(t3.grad_dtype == Dtype::bf16);
}

TEST_CASE("resolve: to_string reads back to an equal layout", "[layout]") {
  const Model moe = load_model("mixtral-8x7b");
  const Cluster c = test::dgx_h100(16);  // 128 devices
  Training t = test::training(1024, 8192);
  for (const char* s :
       {"tp=2,pp=4,cp=2,ep=8,zero=2,mbs=2,sp=1,vpp=2,recompute=full,order=tp-cp-dp-ep-pp",
        "tp=1,pp=1,zero=3", "tp=4,pp=8,mbs=4,schedule=gpipe"}) {
    const Layout l = resolve(s, moe, c, t);
    CHECK(resolve(to_string(l), moe, c, t) == l);
  }
}

TEST_CASE("validate: tensor parallelism divides the heads and the MLP", "[layout]") {
  const Training t = test::training(96, 4096);
  CHECK_THAT(error_for("tp=3", load_model("llama3-8b"), test::dgx_h100(3), t, "layout.tp"),
             Contains("3 does not divide num_attention_heads=32"));
  CHECK_THAT(error_for("tp=16", load_model("llama3-8b"), test::dgx_h100(2), t, "layout.tp"),
             Contains("16 does not divide num_key_value_heads=8"));
  Model odd_mlp = load_model("llama3-8b");
  odd_mlp.ffn_hidden = 5460;
  CHECK_THAT(error_for("tp=8", odd_mlp, test::dgx_h100(1), t, "layout.tp"),
             Contains("8 does not divide intermediate_size=5460"));
  CHECK_THAT(error_for("sp=1,pp=4", load_model("llama3-8b"), test::dgx_h100(1), t,
                       "layout.sequence_parallel"),
             Contains("needs tp > 1, found tp=1"));
  // Sequence parallelism scatters 4100 tokens over tp=8.
  CHECK_THAT(error_for("tp=8,sp=1", load_model("llama3-8b"), test::dgx_h100(1),
                       test::training(96, 4100), "layout.sequence_parallel"),
             Contains("tp=8 does not divide the 4100 tokens"));
}

TEST_CASE("validate: the device count, derived or given", "[layout]") {
  const Training t = test::training(1536, 4096);
  CHECK_THAT(
      error_for("tp=8,pp=4,dp=16", load_model("llama2-70b"), test::dgx_h100(128), t, "layout.dp"),
      Contains("16 × 8 × 4 × 1 = 512") && Contains("1024 devices"));
  CHECK_THAT(error_for("tp=8,pp=3", load_model("llama2-70b"), test::dgx_h100(128), t, "layout.dp"),
             Contains("8 × 3 × 1 = 24 does not divide the 1024 devices"));
}

TEST_CASE("validate: the global batch splits into micro-batches", "[layout]") {
  const Model m = load_model("llama2-70b");
  const Cluster c = test::dgx_h100(128);
  CHECK_THAT(error_for("tp=8,pp=4,mbs=2,gbs=1000", m, c, test::training(1536, 4096),
                       "layout.global_batch"),
             Contains("1000 is not divisible by micro_batch × dp = 2 × 32 = 64"));
  CHECK_THAT(error_for("tp=8,pp=4,mbs=2,gas=8", m, c, test::training(1536, 4096),
                       "layout.num_microbatches"),
             Contains("2 × 8 × 32 = 512 does not equal the global batch 1536"));

  Layout l = resolve("tp=8,pp=4", m, c, test::training(1536, 4096));
  l.micro_batch = 0;
  const InputError e = thrown_input_error(
      [&] { validate_layout(l, m, c, test::training(1536, 4096), "plan.json"); });
  CHECK(e.file == "plan.json");
  CHECK(e.field == "layout.micro_batch");
  CHECK_THAT(e.reason, Contains("found 0"));
}

TEST_CASE("validate: DeepSpeed's train_batch_size must be mbs × gas × dp", "[layout]") {
  const LayoutSpec ds = layout_from_deepspeed({{"train_batch_size", 1024},
                                               {"train_micro_batch_size_per_gpu", 1},
                                               {"gradient_accumulation_steps", 8}},
                                              "ds.json");
  Training t = test::training(0, 4096);
  const InputError e = thrown_input_error([&] {
    resolve_layout(merge(ds, parse_layout_string("tp=8,pp=4")), load_model("llama2-70b"),
                   test::dgx_h100(128), t, "ds.json");
  });
  CHECK(e.file == "ds.json");
  CHECK(e.field == "layout.num_microbatches");
  CHECK_THAT(e.reason, Contains("1 × 8 × 32 = 256 does not equal the global batch 1024"));
  CHECK_THAT(e.hint, Contains("train_batch_size"));
}

TEST_CASE("validate: broken_layout_rule returns what validate_layout throws", "[layout]") {
  const Model m = load_model("llama2-70b");
  const Cluster c = test::dgx_h100(128);
  const Training t = test::training(1536, 4096);
  const Layout valid = resolve("tp=8,pp=4,vpp=2", m, c, t);
  CHECK_FALSE(broken_layout_rule(valid, m, c, t, "plan.json"));
  Layout odd = valid;
  odd.num_microbatches = 50;  // not a multiple of pp, nor the global batch
  Layout zero3 = resolve("tp=8,pp=4,schedule=zb-h1", m, c, t);
  zero3.zero = 3;
  Layout order = valid;
  order.rank_order = "tp-dp-pp";  // placement.h's rule, which throws
  for (const Layout& broken : {odd, zero3, order}) {
    const std::optional<InputError> returned = broken_layout_rule(broken, m, c, t, "plan.json");
    REQUIRE(returned);
    const InputError thrown =
        thrown_input_error([&] { validate_layout(broken, m, c, t, "plan.json"); });
    CHECK(returned->field == thrown.field);
    CHECK(returned->reason == thrown.reason);
    CHECK(returned->hint == thrown.hint);
  }
}

TEST_CASE("layout hash: equal layouts alike, each field it compares apart", "[layout]") {
  const Model m = load_model("llama2-70b");
  const Cluster c = test::dgx_h100(128);
  const Training t = test::training(1536, 4096);
  const Layout l = resolve("tp=8,pp=4,vpp=2,zero=1", m, c, t);
  CHECK(hash_value(resolve(to_string(l), m, c, t)) == hash_value(l));
  Layout zero = l, split = l, order = l;
  zero.zero = 2;
  split.stages = {6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6};
  order.rank_order = "tp-pp-cp-ep-dp";
  for (const Layout& other : {zero, split, order}) CHECK(hash_value(other) != hash_value(l));
}

TEST_CASE("validate: pipeline stages, virtual stages and the schedule", "[layout]") {
  const Model m = load_model("llama2-70b");  // 80 layers
  const Cluster c = test::dgx_h100(128);
  const Training t = test::training(1536, 4096);
  // Layers that do not divide are split unevenly (core/stage_split.h); a layout without the split
  // is refused with the numbers and the split it could give.
  Layout pp3 = resolve("tp=8,pp=3", m, test::dgx_h100(3), test::training(48, 4096));
  CHECK(pp3.stages == std::vector<int>{27, 27, 26});
  pp3.stages.clear();
  const InputError no_split = thrown_input_error(
      [&] { validate_layout(pp3, m, test::dgx_h100(3), test::training(48, 4096), "plan.json"); });
  CHECK(no_split.field == "layout.pp");
  CHECK(no_split.reason == "pp × vpp = 3 × 1 = 3 does not divide num_hidden_layers=80");
  CHECK(no_split.hint == "give each virtual stage's layers: stages=27,27,26");
  CHECK(resolve("tp=8,pp=4,vpp=3", m, c, t).stages ==
        std::vector<int>{6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6});
  CHECK_THAT(error_for("tp=8,vpp=2", m, c, t, "layout.vpp"),
             Contains("vpp=2 needs pp > 1, found pp=1"));
  CHECK_THAT(error_for("tp=8,pp=4,vpp=2,schedule=gpipe", m, c, t, "layout.schedule"),
             Contains("vpp=2 needs schedule=interleaved, found gpipe"));
  // Megatron-LM's 1F1B with virtual stages is the interleaved 1F1B (docs/conventions.md's example).
  Training t2 = t;
  CHECK(resolve_layout(parse_layout_string("tp=8,pp=4,vpp=2,schedule=1f1b"), m, c, t2, "--layout")
            .schedule == Schedule::interleaved);
  CHECK_THAT(error_for("tp=8,pp=4,schedule=interleaved", m, c, t, "layout.schedule"),
             Contains("interleaved needs vpp > 1, found vpp=1"));
  // 1600 / 32 = 50 micro-batches, not a multiple of pp=4.
  CHECK_THAT(error_for("tp=8,pp=4,vpp=2,gbs=1600", m, c, t, "layout.num_microbatches"),
             Contains("multiple of pp=4, found 50"));
}

TEST_CASE("validate: expert parallelism", "[layout]") {
  const Training t = test::training(96, 4096);
  CHECK_THAT(error_for("tp=8,pp=4,ep=2", load_model("llama2-70b"), test::dgx_h100(128),
                       test::training(1536, 4096), "layout.ep"),
             Contains("ep=2 on a dense model"));
  CHECK_THAT(error_for("tp=8,ep=3", load_model("mixtral-8x7b"), test::dgx_h100(3), t, "layout.ep"),
             Contains("3 does not divide num_local_experts=8"));
  CHECK_THAT(
      error_for("tp=4,pp=2,ep=4", load_model("mixtral-8x7b"), test::dgx_h100(2), t, "layout.ep"),
      Contains("4 does not divide dp=2"));
}

TEST_CASE("validate: context parallelism, sequence length, ZeRO stage, rank order", "[layout]") {
  const Model m = load_model("llama2-70b");
  CHECK_THAT(error_for("tp=8,cp=3", m, test::dgx_h100(3), test::training(48, 4096), "layout.cp"),
             Contains("2 × cp = 6 does not divide seq_len=4096"));
  CHECK_THAT(error_for("tp=8,pp=4", m, test::dgx_h100(128), test::training(1536, 8192),
                       "training.seq_len"),
             Contains("8192 exceeds max_position_embeddings=4096"));
  CHECK_THAT(error_for("tp=8,pp=4,zero=4", m, test::dgx_h100(128), test::training(1536, 4096),
                       "layout.zero"),
             Contains("must be 0, 1, 2 or 3, found 4"));
  error_for("tp=8,pp=4,order=tp-dp-pp", m, test::dgx_h100(128), test::training(1536, 4096),
            "layout.rank_order");
}

}  // namespace
}  // namespace shardplan
