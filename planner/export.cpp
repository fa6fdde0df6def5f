#include "planner/export.h"

#include <fmt/format.h>

#include <cassert>

namespace shardplan {

namespace {

std::optional<std::string> megatron_unsupported(const Layout& l) {
  if (l.schedule == Schedule::gpipe)
    return "Megatron-LM has no GPipe schedule (pp > 1 runs 1F1B, or interleaved 1F1B with virtual "
           "stages)";
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
  if (l.cp > 1)
    return "DeepSpeed has no ring context parallelism (Ulysses splits heads, not the sequence)";
  if (l.rank_order != kDefaultRankOrder)
    return fmt::format("Megatron-DeepSpeed orders ranks {} (the layout asks for {})",
                       kDefaultRankOrder, l.rank_order);
  return std::nullopt;
}

void add(std::vector<std::string>& flags, const char* name, int64_t value) {
  flags.emplace_back(name);
  flags.push_back(std::to_string(value));
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
  // Megatron-LM: virtual_pipeline_model_parallel_size = (num_layers / pp) / this.
  if (l.vpp > 1)
    add(flags, "--num-layers-per-virtual-pipeline-stage", p.model.num_layers / (l.pp * l.vpp));
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
  if (p.layout.zero == 1) flags.emplace_back("--use-distributed-optimizer");
  if (p.layout.zero == 3) flags.emplace_back("--use-torch-fsdp2");
  if (p.training.dtype == Dtype::bf16) flags.emplace_back("--bf16");
  if (p.training.dtype == Dtype::fp16) flags.emplace_back("--fp16");
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
    out += f;
  }
  return out;
}

}  // namespace shardplan
