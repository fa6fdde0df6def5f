#include "planner/export.h"

#include <fmt/format.h>

#include <cassert>

#include "core/placement.h"
#include "core/stage_split.h"

namespace shardplan {

namespace {

std::optional<std::string> megatron_unsupported(const Layout& l) {
  if (l.schedule == Schedule::gpipe)
    return "Megatron-LM has no GPipe schedule (pp > 1 runs 1F1B, or interleaved 1F1B with virtual "
           "stages)";
  if (v_placement(l.schedule))
    return "Megatron-LM has no zero-bubble schedule; sail-sg/zero-bubble-pipeline-parallelism's "
           "fork of it runs ZB-V (--zero-bubble-v-schedule, its README's quick settings)";
  if (splits_backward(l.schedule))
    return fmt::format(
        "Megatron-LM has no zero-bubble schedule; sail-sg/zero-bubble-pipeline-parallelism's fork "
        "of it runs one (--enable-zero-bubble --zero-bubble-max-pending-backward {} for {}'s "
        "memory)",
        l.schedule == Schedule::zb_h2 ? 2 * l.pp : l.pp,
        l.schedule == Schedule::zb_h2 ? "ZB-H2" : "ZB-H1");
  // The distributed optimizer shards optimizer states and master weights over dp (ZeRO-1,
  // docs/source/api-guide/dist_optimizer.md); --use-torch-fsdp2 shards everything (ZeRO-3).
  if (l.zero == 2)
    return "Megatron-LM has no ZeRO-2 (its distributed optimizer is ZeRO-1, torch FSDP2 is ZeRO-3)";
  if (l.zero == 3 && l.pp > 1)
    return "Megatron-LM's torch FSDP2 (ZeRO-3) does not run with pipeline parallelism "
           "(arguments.py)";
  if (l.rank_order != kDefaultRankOrder)
    return fmt::format("Megatron-LM orders ranks {} (the layout asks for {})", kDefaultRankOrder,
                       l.rank_order);
  return std::nullopt;
}

// DeepSpeed's PipelineEngine runs its own 1F1B-like TrainSchedule
// (deepspeed/runtime/pipe/schedule.py) and asserts ZeRO stage < 2
// (deepspeed/runtime/pipe/engine.py); it has no ring context parallelism.
std::optional<std::string> deepspeed_unsupported(const Layout& l) {
  if (l.pp > 1 && l.zero >= 2) return "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only";
  if (l.vpp > 1) return "DeepSpeed's pipeline engine has no interleaved (virtual-stage) schedule";
  if (l.schedule == Schedule::gpipe)
    return "DeepSpeed's pipeline engine runs its 1F1B-like schedule, not GPipe";
  if (splits_backward(l.schedule))
    return "DeepSpeed's pipeline engine has no zero-bubble schedule (sail-sg's "
           "ZeroBubbleH1Pipeline is a schedule outside it, and ZB-H2 has none)";
  if (l.cp > 1)
    return "DeepSpeed has no ring context parallelism (Ulysses splits heads, not the sequence)";
  // PipelineModule splits by its partition_method (deepspeed/runtime/pipe/module.py), which takes
  // no layer count per stage.
  if (!l.stages.empty())
    return "DeepSpeed's pipeline engine splits layers by its partition_method, not by given "
           "counts per stage";
  if (l.rank_order != kDefaultRankOrder)
    return fmt::format("Megatron-DeepSpeed orders ranks {} (the layout asks for {})",
                       kDefaultRankOrder, l.rank_order);
  return std::nullopt;
}

void add(std::vector<std::string>& flags, const char* name, int64_t value) {
  flags.emplace_back(name);
  flags.push_back(std::to_string(value));
}

// How Megatron-LM is told the split: an even one by the layers per virtual stage
// (virtual_pipeline_model_parallel_size = (num_layers / pp) / this); an uneven one by the first
// and last pipeline ranks' layers where the others hold the same, else stage by stage with
// Megatron-Core's --pipeline-model-parallel-layout (which implies vpp).
void add_split_flags(std::vector<std::string>& flags, const Model& m, const Layout& l) {
  if (l.stages.empty()) {
    if (l.vpp > 1)
      add(flags, "--num-layers-per-virtual-pipeline-stage", m.num_layers / (l.pp * l.vpp));
    return;
  }
  const auto rank_layers = [&](int rank) {
    int n = 0;
    for (int chunk = 0; chunk < l.vpp; ++chunk)
      n += l.stages[static_cast<size_t>(chunk * l.pp + rank)];
    return n;
  };
  const int first = rank_layers(0), last = rank_layers(l.pp - 1);
  std::string why;
  if (megatron_first_last_split(m.num_layers, l.pp, l.vpp, first, last, why) == l.stages) {
    add(flags, "--decoder-first-pipeline-num-layers", first);
    add(flags, "--decoder-last-pipeline-num-layers", last);
    if (l.vpp > 1) add(flags, "--num-virtual-stages-per-pipeline-rank", l.vpp);
    return;
  }
  flags.emplace_back("--pipeline-model-parallel-layout");
  flags.push_back(megatron_layout_string(l.stages));
}

}  // namespace

std::optional<std::string> unsupported_by(ExportFormat format, const Layout& l) {
  return format == ExportFormat::megatron ? megatron_unsupported(l) : deepspeed_unsupported(l);
}

std::vector<std::string> megatron_parallel_flags(const Plan& p) {
  const Layout& l = p.layout;
  std::vector<std::string> flags;
  add(flags, "--tensor-model-parallel-size", l.tp);
  add(flags, "--pipeline-model-parallel-size", l.pp);
  if (l.cp > 1) add(flags, "--context-parallel-size", l.cp);
  if (l.ep > 1) add(flags, "--expert-model-parallel-size", l.ep);
  if (l.sequence_parallel) flags.emplace_back("--sequence-parallel");
  add_split_flags(flags, p.model, l);
  if (l.recompute == Recompute::selective) {
    flags.insert(flags.end(), {"--recompute-granularity", "selective"});
  } else if (l.recompute == Recompute::full) {
    // Every layer recomputed from its input, as Narayanan et al. 2021 price full recompute.
    flags.insert(flags.end(), {"--recompute-granularity", "full", "--recompute-method", "uniform"});
    add(flags, "--recompute-num-layers", 1);
  }
  return flags;
}

std::vector<std::string> megatron_flags(const Plan& p) {
  assert(!megatron_unsupported(p.layout));
  std::vector<std::string> flags = megatron_parallel_flags(p);
  add(flags, "--micro-batch-size", p.layout.micro_batch);
  add(flags, "--global-batch-size", p.layout.global_batch());
  const Layout& l = p.layout;
  const Training& t = p.training;
  if (l.zero == 1) flags.emplace_back("--use-distributed-optimizer");
  if (l.zero == 3) flags.emplace_back("--use-torch-fsdp2");
  // The overlaps the plan was priced with (the framework's, core/framework.h); Megatron-LM runs
  // none of them unless asked.
  if (t.overlap_grad_reduce && int64_t{l.dp} * l.cp > 1 && l.zero <= 1)
    flags.emplace_back("--overlap-grad-reduce");
  // Megatron-LM overlaps the parameter gather only beside the gradient reduction.
  if (t.overlap_param_gather && t.overlap_grad_reduce && l.dp * l.cp > 1 && l.zero == 1)
    flags.emplace_back("--overlap-param-gather");
  // Userbuffers within one NVLink domain, as priced (simulator/tp_comm_overlap.h).
  if (t.tp_comm_overlap && l.sequence_parallel && l.tp > 1 &&
      group_span(p.cluster, l, 0, Group::tp).level == 0)
    flags.emplace_back("--tp-comm-overlap");
  if (p.training.dtype == Dtype::bf16) flags.emplace_back("--bf16");
  if (p.training.dtype == Dtype::fp16) flags.emplace_back("--fp16");
  // Transformer Engine's FP8 linears: E4M3 forward and E5M2 gradients ("hybrid", Micikevicius et
  // al. 2022), and the recipe by Megatron-LM's name for it.
  if (p.training.fp8 != Fp8Recipe::none) {
    flags.insert(flags.end(), {"--fp8-format", "hybrid", "--fp8-recipe"});
    flags.emplace_back(enum_name(p.training.fp8, kMegatronFp8RecipeNames));
  }
  return flags;
}

nlohmann::json deepspeed_config(const Plan& p) {
  assert(!deepspeed_unsupported(p.layout));
  const Layout& l = p.layout;
  nlohmann::json ds = {{"train_batch_size", l.global_batch()},
                       {"train_micro_batch_size_per_gpu", l.micro_batch},
                       {"gradient_accumulation_steps", l.num_microbatches},
                       {"zero_optimization", {{"stage", l.zero}}}};
  if (p.training.dtype == Dtype::bf16) ds["bf16"] = {{"enabled", true}};
  if (p.training.dtype == Dtype::fp16) ds["fp16"] = {{"enabled", true}};
  return ds;
}

std::string format_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (const std::string& f : flags) {
    if (f.starts_with("--") && !out.empty())
      out += " \\\n";
    else if (!out.empty())
      out += ' ';
    // Quoted where a shell would read it otherwise (the pipeline layout's "|", "*" and "()").
    out += f.find_first_of("|*()<>&;$ ") == std::string::npos ? f : "'" + f + "'";
  }
  return out;
}

}  // namespace shardplan
