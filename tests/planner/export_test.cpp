#include "planner/export.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/presets.h"
#include "planner/enumerate.h"

using namespace shardplan;

namespace {

Plan plan_of(const std::string& model, int nodes, int64_t global_batch, int64_t seq_len,
             const std::string& layout) {
  Plan p;
  p.model = load_model(model);
  p.cluster = load_cluster("dgx-h100", nodes);
  p.training.global_batch = global_batch;
  p.training.seq_len = seq_len;
  p.layout = resolve_layout(parse_layout_string(layout), p.model, p.cluster, p.training, "test");
  return p;
}

// Every layout of a model on a cluster that `format` runs, as plans.
std::vector<Plan> supported_plans(const std::string& model, int nodes, int64_t global_batch,
                                  int64_t seq_len, ExportFormat format) {
  Plan base = plan_of(model, nodes, global_batch, seq_len, "");
  std::vector<Plan> plans;
  for (const Layout& l : enumerate_layouts(base.model, base.cluster, base.training, {}).layouts) {
    if (unsupported_by(format, l)) continue;
    base.layout = l;
    plans.push_back(base);
  }
  return plans;
}

}  // namespace

TEST_CASE("Megatron-LM flags as Megatron spells them", "[planner][export]") {
  const Plan p = plan_of("llama3-8b", 4, 64, 8192,
                         "tp=4,pp=2,cp=2,sp=1,vpp=2,mbs=1,zero=1,recompute=selective");
  CHECK(megatron_flags(p) ==
        std::vector<std::string>{
            "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "2",
            "--context-parallel-size", "2", "--sequence-parallel",
            "--num-layers-per-virtual-pipeline-stage", "8",  // 32 / (2 · 2)
            "--recompute-granularity", "selective", "--micro-batch-size", "1",
            "--global-batch-size", "64", "--use-distributed-optimizer",
            // the overlaps it was priced with (Training's defaults, as a framework sets them)
            "--overlap-grad-reduce", "--overlap-param-gather", "--bf16"});
  // Megatron-Core's profile overlaps the sequence-parallel collectives, and trains in FP8 here.
  Plan fp8 = p;
  fp8.training.tp_comm_overlap = true;
  fp8.training.fp8 = Fp8Recipe::current;
  const std::vector<std::string> flags = megatron_flags(fp8);
  CHECK(std::find(flags.begin(), flags.end(), "--tp-comm-overlap") != flags.end());
  CHECK(std::vector<std::string>(flags.end() - 4, flags.end()) ==
        std::vector<std::string>{"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
  CHECK(parse_megatron_flags(flags, fp8.model).fp8 == Fp8Recipe::current);
  const Plan full = plan_of("llama3-8b", 1, 16, 4096, "tp=8,recompute=full");
  CHECK(megatron_flags(full) ==
        std::vector<std::string>{"--tensor-model-parallel-size", "8",
                                 "--pipeline-model-parallel-size", "1", "--recompute-granularity",
                                 "full", "--recompute-method", "uniform", "--recompute-num-layers",
                                 "1", "--micro-batch-size", "1", "--global-batch-size", "16",
                                 "--bf16"});
  CHECK(format_flags({"--tensor-model-parallel-size", "8", "--sequence-parallel", "--bf16"}) ==
        "--tensor-model-parallel-size 8 \\\n--sequence-parallel \\\n--bf16");
}

TEST_CASE("Megatron-LM flags for uneven stages: the ends' layers, else the pipeline layout",
          "[planner][export]") {
  // Llama 3 405B over 16 stages, the first and last a layer short (Llama 3 paper §3.3.2).
  const Plan llama = plan_of("llama3-405b", 1024, 2048, 8192, "tp=8,pp=16,zero=1");
  const std::vector<std::string> flags = megatron_flags(llama);
  const auto first = std::find(flags.begin(), flags.end(), "--decoder-first-pipeline-num-layers");
  REQUIRE(flags.end() - first >= 4);
  CHECK(std::vector<std::string>(first, first + 4) ==
        std::vector<std::string>{"--decoder-first-pipeline-num-layers", "7",
                                 "--decoder-last-pipeline-num-layers", "7"});
  // Middle stages that differ: Megatron-Core's layout, one virtual stage after another.
  const Plan middle = plan_of("llama3-8b", 4, 64, 4096, "tp=8,pp=4,stages=8,9,8,7");
  const std::vector<std::string> layout_flags = megatron_flags(middle);
  const auto at =
      std::find(layout_flags.begin(), layout_flags.end(), "--pipeline-model-parallel-layout");
  REQUIRE(at != layout_flags.end());
  CHECK(*(at + 1) == "Et*8|t*9|t*8|t*7,L");
  CHECK_THAT(format_flags(layout_flags),
             Catch::Contains("--pipeline-model-parallel-layout 'Et*8|t*9|t*8|t*7,L' \\\n"));
  CHECK(unsupported_by(ExportFormat::deepspeed, middle.layout));
}

TEST_CASE("a DeepSpeed config as DeepSpeed spells it", "[planner][export]") {
  const Plan p = plan_of("llama3-8b", 2, 64, 4096, "tp=2,mbs=2,zero=2");
  CHECK(deepspeed_config(p) == nlohmann::json::parse(R"({
    "train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
    "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})"));
  CHECK(megatron_parallel_flags(p) == std::vector<std::string>{"--tensor-model-parallel-size", "2",
                                                               "--pipeline-model-parallel-size",
                                                               "1"});
}

TEST_CASE("what each framework cannot run", "[planner][export]") {
  Layout l;
  l.pp = 2;
  l.schedule = Schedule::gpipe;
  CHECK(unsupported_by(ExportFormat::megatron, l));
  CHECK(unsupported_by(ExportFormat::deepspeed, l));
  l.schedule = Schedule::one_f_one_b;
  CHECK_FALSE(unsupported_by(ExportFormat::megatron, l));
  l.zero = 2;
  CHECK(unsupported_by(ExportFormat::megatron, l));   // no ZeRO-2 in Megatron-LM
  CHECK(unsupported_by(ExportFormat::deepspeed, l));  // no ZeRO-2 under DeepSpeed's pipeline engine
  l.pp = 1;
  CHECK_FALSE(unsupported_by(ExportFormat::deepspeed, l));
  l.cp = 2;
  CHECK(unsupported_by(ExportFormat::deepspeed, l));
}

TEST_CASE("Megatron-LM flags parse back to the same layout", "[planner][export]") {
  for (const auto& [model, nodes, seq] :
       {std::tuple{"gpt-tiny", 1, 64}, std::tuple{"mixtral-8x7b", 2, 4096}}) {
    const std::vector<Plan> plans = supported_plans(model, nodes, 32, seq, ExportFormat::megatron);
    REQUIRE(plans.size() > 100);
    for (Plan p : plans) {
      const LayoutSpec spec = parse_megatron_flags(megatron_flags(p), p.model);
      CHECK(spec.dtype == Dtype::bf16);
      INFO(to_string(p.layout));
      CHECK(resolve_layout(spec, p.model, p.cluster, p.training, "--megatron") == p.layout);
    }
  }
}

TEST_CASE("a DeepSpeed config with its Megatron-DeepSpeed flags parses back to the same layout",
          "[planner][export]") {
  const std::vector<Plan> plans = supported_plans("gpt-tiny", 1, 32, 64, ExportFormat::deepspeed);
  REQUIRE(plans.size() > 100);
  for (Plan p : plans) {
    const LayoutSpec spec = merge(parse_megatron_flags(megatron_parallel_flags(p), p.model),
                                  layout_from_deepspeed(deepspeed_config(p), "ds.json"));
    CHECK(spec.dtype == Dtype::bf16);
    INFO(to_string(p.layout));
    CHECK(resolve_layout(spec, p.model, p.cluster, p.training, "ds.json") == p.layout);
  }
}
