// The layout from a DeepSpeed config (deepspeed/runtime/config.py and zero/config.py name the
// keys): the keys that shape the layout are read, the runtime-only ones skipped by name, and
// anything else is an error, so a setting that would change the step is never silently lost.
#include <fmt/format.h>

#include <limits>

#include "core/json_reader.h"
#include "core/layout.h"

namespace shardplan {

namespace {

// Hugging Face's DeepSpeed integration writes "auto" for values it fills from its own arguments;
// they are then left for resolve_layout to derive.
bool is_auto(ObjectReader& r, std::string_view key) {
  if (!r.has(key)) return false;
  const nlohmann::json& v = r.raw(key);
  return v.is_string() && v.get<std::string>() == "auto";
}

std::optional<int64_t> read_count(ObjectReader& r, std::string_view key) {
  if (!r.has(key) || is_auto(r, key)) return r.ignore({key}), std::nullopt;
  return r.positive_integer(key);
}

std::optional<int> read_int_count(ObjectReader& r, std::string_view key) {
  const std::optional<int64_t> v = read_count(r, key);
  if (v && *v > std::numeric_limits<int>::max()) r.fail(key, fmt::format("{} is out of range", *v));
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

// ZeRO-Offload moves optimizer states or parameters to host memory or NVMe, which shardplan does
// not model: a device other than "none" would make every memory figure wrong, so it is refused.
void refuse_offload(ObjectReader& zero, std::string_view key) {
  if (!zero.has(key)) return zero.ignore({key});
  ObjectReader section = zero.object(key);
  const std::string device = section.string_or("device", "none");
  if (device != "none")
    section.fail("device", fmt::format("offloading to \"{}\" is not modelled", device),
                 "set \"device\": \"none\" or remove the section");
}

std::optional<int> read_zero(ObjectReader& ds) {
  if (!ds.has("zero_optimization")) return ds.ignore({"zero_optimization"}), std::nullopt;
  ObjectReader zero = ds.object("zero_optimization");
  std::optional<int> stage;
  if (zero.has("stage")) {
    const int64_t v = zero.integer("stage");
    if (v < 0 || v > 3) zero.fail("stage", fmt::format("expected 0, 1, 2 or 3, found {}", v));
    stage = static_cast<int>(v);
  } else {
    zero.ignore({"stage"});
  }
  refuse_offload(zero, "offload_optimizer");
  refuse_offload(zero, "offload_param");
  // Runtime-only: communication bucketing and overlap, ZeRO-3 prefetch and persistence
  // thresholds, checkpoint formats. They change when and in what pieces the same bytes move,
  // not the layout or the bytes each rank holds.
  zero.ignore({"allgather_partitions", "allgather_bucket_size", "overlap_comm", "reduce_scatter",
               "reduce_bucket_size", "contiguous_gradients", "round_robin_gradients",
               "sub_group_size", "stage3_max_live_parameters", "stage3_max_reuse_distance",
               "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold",
               "stage3_gather_16bit_weights_on_model_save",
               "stage3_gather_fp16_weights_on_model_save", "elastic_checkpoint",
               "load_from_fp32_weights", "ignore_unused_parameters"});
  zero.reject_unknown();
  return stage;
}

std::optional<Dtype> read_dtype(ObjectReader& ds) {
  std::optional<Dtype> dtype;
  for (const auto& [key, d] : {std::pair{"bf16", Dtype::bf16}, std::pair{"fp16", Dtype::fp16}}) {
    if (!ds.has(key)) {
      ds.ignore({key});
      continue;
    }
    ObjectReader section = ds.object(key);
    const bool enabled = !is_auto(section, "enabled") && section.boolean_or("enabled", false);
    // fp16 loss scaling: runtime-only, the tensors keep their sizes.
    if (d == Dtype::fp16)
      section.ignore({"auto_cast", "loss_scale", "initial_scale_power", "loss_scale_window",
                      "hysteresis", "consecutive_hysteresis", "min_loss_scale"});
    section.reject_unknown();
    if (!enabled) continue;
    if (dtype) ds.fail(key, "bf16 and fp16 are both enabled", "enable one of them");
    dtype = d;
  }
  return dtype;
}

}  // namespace

LayoutSpec layout_from_deepspeed(const nlohmann::json& j, const std::string& file) {
  ObjectReader ds(j, file);
  LayoutSpec spec;
  spec.micro_batch = read_int_count(ds, "train_micro_batch_size_per_gpu");
  spec.num_microbatches = read_int_count(ds, "gradient_accumulation_steps");
  spec.global_batch = read_count(ds, "train_batch_size");
  spec.zero = read_zero(ds);
  spec.dtype = read_dtype(ds);
  // Runtime-only: the optimizer's hyper-parameters and learning-rate schedule, clipping, logging,
  // profiling and monitoring, checkpointing, and gradient pre-scaling (the same bytes reduced).
  ds.ignore({"optimizer", "scheduler", "gradient_clipping", "steps_per_print",
             "wall_clock_breakdown", "memory_breakdown", "dump_state", "flops_profiler",
             "tensorboard", "wandb", "csv_monitor", "comms_logger", "checkpoint",
             "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "prescale_gradients",
             "gradient_predivide_factor"});
  ds.reject_unknown();
  return spec;
}

}  // namespace shardplan
