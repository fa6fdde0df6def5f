// Reading the layout as users write it: the compact string, Megatron-LM flags, a DeepSpeed config
// and the layout JSON, and printing the compact string. No model-dependent validation here.
#include "core/layout.h"

#include <catch2/catch.hpp>

#include "tests/core/layout_fixtures.h"
#include "tests/core/thrown_input_error.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using testing::thrown_input_error;

TEST_CASE("compact string: every key of the docs/conventions.md example", "[layout]") {
  const LayoutSpec s = parse_layout_string(
      "tp=8,pp=4,dp=32,cp=1,ep=1,zero=1,mbs=1,gbs=1536,sp=1,vpp=2,recompute=selective,schedule="
      "1f1b");
  CHECK(s.tp == 8);
  CHECK(s.pp == 4);
  CHECK(s.dp == 32);
  CHECK(s.cp == 1);
  CHECK(s.ep == 1);
  CHECK(s.zero == 1);
  CHECK(s.micro_batch == 1);
  CHECK(s.global_batch == 1536);
  CHECK(s.sequence_parallel == true);
  CHECK(s.vpp == 2);
  CHECK(s.recompute == Recompute::selective);
  CHECK(s.schedule == Schedule::one_f_one_b);
  CHECK_FALSE(s.num_microbatches);
  CHECK_FALSE(s.rank_order);
  CHECK_FALSE(s.dtype);
}

TEST_CASE("compact string: long names, spaces, booleans and an empty string", "[layout]") {
  const LayoutSpec a = parse_layout_string(" tp = 2 , gas=6, order=tp-dp-cp-ep-pp, sp=false ");
  CHECK(a.tp == 2);
  CHECK(a.num_microbatches == 6);
  CHECK(a.rank_order == "tp-dp-cp-ep-pp");
  CHECK(a.sequence_parallel == false);
  const LayoutSpec b = parse_layout_string(
      "micro_batch=4,global_batch=512,num_microbatches=2,rank_order=pp-dp-ep-cp-tp,sequence_"
      "parallel=true");
  CHECK(b.micro_batch == 4);
  CHECK(b.global_batch == 512);
  CHECK(b.num_microbatches == 2);
  CHECK(b.rank_order == "pp-dp-ep-cp-tp");
  CHECK(b.sequence_parallel == true);
  CHECK(parse_layout_string("sp=0").sequence_parallel == false);
  const LayoutSpec empty = parse_layout_string("");
  CHECK_FALSE(empty.tp);
  CHECK_FALSE(empty.global_batch);
}

TEST_CASE("compact string: errors name the source, the field and the value", "[layout]") {
  CHECK(std::string(thrown_input_error([] { parse_layout_string("tp=x"); }).what()) ==
        "--layout: layout.tp: expected a positive integer, found \"x\"");
  const InputError zero_tp =
      thrown_input_error([] { parse_layout_string("pp=2,tp=0", "plan --layout"); });
  CHECK(zero_tp.file == "plan --layout");
  CHECK(zero_tp.field == "layout.tp");
  CHECK_THAT(zero_tp.reason, Contains("\"0\""));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("zero=-1"); }).reason,
             Contains("non-negative"));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("gbs=1.5"); }).reason,
             Contains("\"1.5\""));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("tp=99999999999"); }).reason,
             Contains("out of range"));
  // A value without its key is no setting (it read as tp, whose long name is empty).
  const InputError keyless = thrown_input_error([] { parse_layout_string("=8"); });
  CHECK(keyless.field == "layout");
  CHECK(keyless.reason == "\"=8\" has no key before its =");

  const InputError sp = thrown_input_error([] { parse_layout_string("sp=2"); });
  CHECK(sp.field == "layout.sp");
  CHECK_THAT(sp.reason, Contains("0, 1, true or false") && Contains("\"2\""));

  const InputError recompute = thrown_input_error([] { parse_layout_string("recompute=partial"); });
  CHECK(recompute.field == "layout.recompute");
  CHECK_THAT(recompute.reason, Contains("\"partial\""));
  CHECK(recompute.hint == "one of: none | selective | full");
  CHECK(thrown_input_error([] { parse_layout_string("schedule=zb"); }).hint ==
        "one of: gpipe | 1f1b | interleaved | zb-h1 | zb-h2 | zb-v");

  const InputError no_value = thrown_input_error([] { parse_layout_string("tp=8,pp4"); });
  CHECK(no_value.file == "--layout");
  CHECK_THAT(no_value.reason, Contains("key=value") && Contains("\"pp4\""));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("tp=8,"); }).reason,
             Contains("key=value"));
}

TEST_CASE("compact string: unknown keys suggest the near miss, duplicates are refused",
          "[layout]") {
  const InputError pp_size = thrown_input_error([] { parse_layout_string("tp=8,pp_size=4"); });
  CHECK(pp_size.file == "--layout");
  CHECK(pp_size.field == "layout.pp_size");
  CHECK(pp_size.reason == "unknown key");
  CHECK_THAT(pp_size.hint, StartsWith("did you mean pp? accepted: tp, pp,"));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("ordr=tp-cp-ep-dp-pp"); }).hint,
             Contains("did you mean order"));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("zero_stage=1"); }).hint,
             Contains("did you mean zero"));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("sequence=1"); }).hint,
             Contains("did you mean sequence_parallel"));
  CHECK_THAT(thrown_input_error([] { parse_layout_string("nodes=4"); }).hint,
             !Contains("did you mean"));

  const InputError twice = thrown_input_error([] { parse_layout_string("tp=8,pp=2,tp=4"); });
  CHECK(twice.field == "layout.tp");
  CHECK(twice.reason == "given more than once");
  CHECK(thrown_input_error([] { parse_layout_string("mbs=1,micro_batch=2"); }).field ==
        "layout.micro_batch");
}

TEST_CASE("Megatron-LM flags: both spellings, both value forms, virtual stages from layers",
          "[layout]") {
  const Model m = load_model("llama2-70b");  // 80 layers
  const LayoutSpec s = parse_megatron_flags(
      {"--tensor-model-parallel-size", "8", "--pp=4", "--context-parallel-size=2", "--ep", "1",
       "--sequence-parallel", "--micro-batch-size", "2", "--global-batch-size=1536",
       "--num-layers-per-virtual-pipeline-stage", "5", "--recompute-granularity", "full",
       "--zero-stage", "1"},
      m);
  CHECK(s.tp == 8);
  CHECK(s.pp == 4);
  CHECK(s.cp == 2);
  CHECK(s.ep == 1);
  CHECK(s.sequence_parallel == true);
  CHECK(s.micro_batch == 2);
  CHECK(s.global_batch == 1536);
  CHECK(s.vpp == 4);  // 80 layers / (pp 4 × 5 layers per virtual stage)
  CHECK(s.recompute == Recompute::full);
  CHECK(s.zero == 1);

  const LayoutSpec short_names = parse_megatron_flags(
      {"--tp=2", "--cp", "4", "--expert-model-parallel-size=8", "--pipeline-model-parallel-size",
       "2", "--num-virtual-stages-per-pipeline-rank", "5", "--recompute-activations",
       "--use-distributed-optimizer"},
      m);
  CHECK(short_names.tp == 2);
  CHECK(short_names.cp == 4);
  CHECK(short_names.ep == 8);
  CHECK(short_names.pp == 2);
  CHECK(short_names.vpp == 5);
  CHECK(short_names.recompute == Recompute::selective);
  CHECK(short_names.zero == 1);
  // Without --pp the pipeline has one stage: 80 layers / 8 per virtual stage.
  CHECK(parse_megatron_flags({"--num-layers-per-virtual-pipeline-stage=8"}, m).vpp == 10);
}

TEST_CASE("Megatron-LM flags: full recompute, FSDP2 and the dtype as an exported command has them",
          "[layout]") {
  const Model m = load_model("llama2-70b");
  const LayoutSpec s = parse_megatron_flags(
      {"--tensor-model-parallel-size", "8", "--recompute-granularity", "full", "--recompute-method",
       "uniform", "--recompute-num-layers", "1", "--use-torch-fsdp2", "--bf16"},
      m);
  CHECK(s.recompute == Recompute::full);
  CHECK(s.zero == 3);
  CHECK(s.dtype == Dtype::bf16);
  CHECK(parse_megatron_flags({"--fp16"}, m).dtype == Dtype::fp16);
  CHECK(thrown_input_error([&] {
          parse_megatron_flags({"--bf16", "--fp16"}, m);
        }).reason == "given more than once");

  const InputError block = thrown_input_error([&] {
    parse_megatron_flags({"--recompute-granularity=full", "--recompute-method=block"}, m);
  });
  CHECK(block.file == "--recompute-method");
  CHECK(block.field == "layout.recompute");
  CHECK_THAT(block.reason, Contains("\"block\" is not modelled"));
  CHECK_THAT(
      thrown_input_error([&] {
        parse_megatron_flags({"--recompute-granularity=full", "--recompute-num-layers=4"}, m);
      }).reason,
      Contains("4 layers per recompute group"));
  const InputError selective = thrown_input_error([&] {
    parse_megatron_flags({"--recompute-method", "uniform", "--recompute-activations"}, m);
  });
  CHECK(selective.file == "--recompute-method");
  CHECK_THAT(selective.reason, Contains("found selective"));
}

TEST_CASE("Megatron-LM flags: FP8 by its recipe, the overlaps accepted", "[layout]") {
  const Model m = load_model("llama2-70b");
  CHECK(parse_megatron_flags({"--fp8-format", "hybrid"}, m).fp8 == Fp8Recipe::delayed);
  CHECK(parse_megatron_flags({"--fp8-format=hybrid", "--fp8-recipe=tensorwise"}, m).fp8 ==
        Fp8Recipe::current);
  CHECK(parse_megatron_flags({"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"}, m).fp8 ==
        Fp8Recipe::mxfp8);
  CHECK_FALSE(parse_megatron_flags({"--tp-comm-overlap", "--overlap-grad-reduce"}, m).fp8);
  const InputError alone = thrown_input_error([&] {
    parse_megatron_flags({"--fp8-recipe", "delayed"}, m);
  });
  CHECK(alone.file == "--fp8-recipe");
  CHECK(alone.field == "layout.fp8");
  CHECK_THAT(thrown_input_error([&] {
               parse_megatron_flags({"--fp8-format", "hybrid", "--fp8-recipe", "blockwise"}, m);
             }).reason,
             Contains("\"blockwise\" is not modelled"));
}

TEST_CASE("Megatron-LM flags: errors name the flag and the field", "[layout]") {
  const Model m = load_model("llama2-70b");
  const InputError unknown = thrown_input_error([&] {
    parse_megatron_flags({"--tensor-parallel-size", "8"}, m);
  });
  CHECK(unknown.file == "--tensor-parallel-size");
  CHECK(unknown.reason == "unknown Megatron-LM flag");
  CHECK_THAT(unknown.hint,
             StartsWith("did you mean --context-parallel-size or --tensor-model-parallel-size?"));
  CHECK_THAT(thrown_input_error([&] { parse_megatron_flags({"--micro-bach-size=1"}, m); }).hint,
             Contains("did you mean --micro-batch-size"));

  CHECK(std::string(thrown_input_error([&] {
                      parse_megatron_flags({"--tp", "eight"}, m);
                    }).what()) == "--tp: layout.tp: expected a positive integer, found \"eight\"");
  const InputError missing = thrown_input_error([&] {
    parse_megatron_flags({"--pp=2", "--micro-batch-size"}, m);
  });
  CHECK(missing.file == "--micro-batch-size");
  CHECK(missing.field == "layout.micro_batch");
  CHECK(missing.reason == "missing value");
  CHECK(thrown_input_error([&] { parse_megatron_flags({"--sequence-parallel=1"}, m); }).reason ==
        "takes no value");
  CHECK_THAT(thrown_input_error([&] { parse_megatron_flags({"8"}, m); }).reason,
             Contains("expected a Megatron-LM flag"));

  const InputError twice = thrown_input_error([&] {
    parse_megatron_flags({"--tp", "8", "--tensor-model-parallel-size=4"}, m);
  });
  CHECK(twice.file == "--tensor-model-parallel-size");
  CHECK(twice.field == "layout.tp");
  CHECK(twice.reason == "given more than once");
  CHECK(thrown_input_error([&] {
          parse_megatron_flags({"--use-distributed-optimizer", "--zero-stage=2"}, m);
        }).field == "layout.zero");

  const InputError vpp = thrown_input_error([&] {
    parse_megatron_flags({"--pp", "4", "--num-layers-per-virtual-pipeline-stage", "6"}, m);
  });
  CHECK(vpp.file == "--num-layers-per-virtual-pipeline-stage");
  CHECK(vpp.field == "layout.vpp");
  CHECK_THAT(vpp.reason,
             Contains("pp=4 × 6") && Contains("= 24") && Contains("num_hidden_layers=80"));
}

TEST_CASE("DeepSpeed config: layout keys read, runtime keys skipped", "[layout]") {
  const nlohmann::json ds = {
      {"train_batch_size", 1024},
      {"train_micro_batch_size_per_gpu", 2},
      {"gradient_accumulation_steps", 16},
      {"gradient_clipping", 1.0},
      {"steps_per_print", 10},
      {"wall_clock_breakdown", false},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-4}}}}},
      {"scheduler", {{"type", "WarmupLR"}}},
      {"bf16", {{"enabled", true}}},
      {"fp16", {{"enabled", false}, {"loss_scale", 0}, {"initial_scale_power", 16}}},
      {"zero_optimization",
       {{"stage", 3},
        {"overlap_comm", true},
        {"contiguous_gradients", true},
        {"reduce_bucket_size", 5e8},
        {"stage3_prefetch_bucket_size", 5e8},
        {"offload_optimizer", {{"device", "none"}}}}}};
  const LayoutSpec s = layout_from_deepspeed(ds, "ds.json");
  CHECK(s.global_batch == 1024);
  CHECK(s.micro_batch == 2);
  CHECK(s.num_microbatches == 16);
  CHECK(s.zero == 3);
  CHECK(s.dtype == Dtype::bf16);
  CHECK_FALSE(s.tp);

  // Hugging Face's "auto" leaves the value to be derived.
  const LayoutSpec hf = layout_from_deepspeed({{"train_batch_size", "auto"},
                                               {"train_micro_batch_size_per_gpu", "auto"},
                                               {"gradient_accumulation_steps", "auto"},
                                               {"fp16", {{"enabled", "auto"}}},
                                               {"zero_optimization", {{"stage", 2}}}},
                                              "ds.json");
  CHECK_FALSE(hf.global_batch);
  CHECK_FALSE(hf.micro_batch);
  CHECK_FALSE(hf.num_microbatches);
  CHECK_FALSE(hf.dtype);
  CHECK(hf.zero == 2);
  CHECK(
      layout_from_deepspeed({{"fp16", {{"enabled", true}, {"hysteresis", 2}}}}, "ds.json").dtype ==
      Dtype::fp16);
}

TEST_CASE("DeepSpeed config: unknown keys, bad stages, offload and two dtypes are errors",
          "[layout]") {
  const InputError unknown = thrown_input_error([] {
    layout_from_deepspeed({{"elasticity", {{"enabled", true}}}}, "ds.json");
  });
  CHECK(unknown.file == "ds.json");
  CHECK(unknown.field == "elasticity");
  CHECK(unknown.reason == "unknown field");
  CHECK_THAT(unknown.hint, Contains("train_batch_size") && Contains("gradient_clipping"));
  CHECK(thrown_input_error([] {
          layout_from_deepspeed({{"zero_optimization", {{"stage", 1}, {"mics_shard_size", 8}}}},
                                "ds.json");
        }).field == "zero_optimization.mics_shard_size");

  const InputError stage = thrown_input_error([] {
    layout_from_deepspeed({{"zero_optimization", {{"stage", 4}}}}, "ds.json");
  });
  CHECK(stage.field == "zero_optimization.stage");
  CHECK_THAT(stage.reason, Contains("found 4"));

  const InputError offload = thrown_input_error([] {
    layout_from_deepspeed(
        {{"zero_optimization", {{"stage", 3}, {"offload_param", {{"device", "cpu"}}}}}}, "ds.json");
  });
  CHECK(offload.field == "zero_optimization.offload_param.device");
  CHECK_THAT(offload.reason, Contains("\"cpu\""));

  const InputError both = thrown_input_error([] {
    layout_from_deepspeed({{"bf16", {{"enabled", true}}}, {"fp16", {{"enabled", true}}}},
                          "ds.json");
  });
  CHECK_THAT(both.reason, Contains("both enabled"));
  CHECK(thrown_input_error([] {
          layout_from_deepspeed({{"train_batch_size", 0}}, "ds.json");
        }).field == "train_batch_size");
  CHECK(thrown_input_error([] {
          layout_from_deepspeed(nlohmann::json::array(), "ds.json");
        }).file == "ds.json");
}

TEST_CASE("merge: fields set on top replace those below", "[layout]") {
  const LayoutSpec base = parse_layout_string("tp=8,pp=4,mbs=1,recompute=full");
  const LayoutSpec merged = merge(base, parse_layout_string("pp=2,sp=1"));
  CHECK(merged.tp == 8);
  CHECK(merged.pp == 2);
  CHECK(merged.micro_batch == 1);
  CHECK(merged.sequence_parallel == true);
  CHECK(merged.recompute == Recompute::full);
  CHECK_FALSE(merged.dp);
}

Layout example_layout() {
  Layout l;
  l.dp = 32;
  l.tp = 8;
  l.pp = 4;
  l.zero = 1;
  l.micro_batch = 2;
  l.num_microbatches = 24;
  l.recompute = Recompute::selective;
  l.sequence_parallel = true;
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  return l;
}

TEST_CASE("to_string: every field, the global batch as mbs × num_microbatches × dp", "[layout]") {
  CHECK(to_string(example_layout()) ==
        "tp=8,pp=4,dp=32,cp=1,ep=1,zero=1,mbs=2,gbs=1536,sp=1,vpp=2,recompute=selective,"
        "schedule=interleaved,order=tp-cp-ep-dp-pp");
  const LayoutSpec back = parse_layout_string(to_string(example_layout()));
  CHECK(back.global_batch == 1536);
  CHECK(back.rank_order == "tp-cp-ep-dp-pp");
}

TEST_CASE("layout JSON: round trip, every key required, unknown keys refused", "[layout]") {
  Layout l = example_layout();
  l.cp = 2;
  l.ep = 4;
  l.rank_order = "tp-cp-dp-ep-pp";
  const nlohmann::json j = layout_to_json(l);
  CHECK(j.size() == 13);
  CHECK(j["schedule"] == "interleaved");
  CHECK(layout_from_json(j, "plan.json") == l);

  nlohmann::json extra = j;
  extra["layers"] = 3;
  const InputError unknown = thrown_input_error([&] { layout_from_json(extra, "plan.json"); });
  CHECK(unknown.file == "plan.json");
  CHECK(unknown.field == "layout.layers");
  for (const auto& [key, value] : j.items()) {
    nlohmann::json missing = j;
    missing.erase(key);
    const InputError e = thrown_input_error([&] { layout_from_json(missing, "plan.json"); });
    CHECK(e.field == "layout." + key);
    CHECK(e.reason == "missing required field");
  }
  nlohmann::json bad = j;
  bad["schedule"] = "zero-bubble";
  CHECK(thrown_input_error([&] { layout_from_json(bad, "plan.json"); }).hint ==
        "one of: gpipe | 1f1b | interleaved | zb-h1 | zb-h2 | zb-v");
}

}  // namespace
}  // namespace shardplan
