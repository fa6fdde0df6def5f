// The layout: how one training step is split over the devices — data, tensor, pipeline, context
// and expert parallelism, ZeRO stage, micro-batching, recomputation and the pipeline schedule.
// Written by users as the compact string, as Megatron-LM flags or as a DeepSpeed config
// (docs/conventions.md spells all three).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/dtype.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved, zb_h1, zb_h2, zb_v };

inline constexpr EnumNames<Recompute, 3> kRecomputeNames{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
inline constexpr EnumNames<Schedule, 6> kScheduleNames{{{Schedule::gpipe, "gpipe"},
                                                        {Schedule::one_f_one_b, "1f1b"},
                                                        {Schedule::interleaved, "interleaved"},
                                                        {Schedule::zb_h1, "zb-h1"},
                                                        {Schedule::zb_h2, "zb-h2"},
                                                        {Schedule::zb_v, "zb-v"}}};

// Whether a schedule splits each layer's backward into B, the input gradient that the previous
// stage waits for, and W, the weight gradient it runs later to fill the bubble (Qi et al., ICLR
// 2024, "Zero Bubble Pipeline Parallelism" §2).
constexpr bool splits_backward(Schedule s) {
  return s == Schedule::zb_h1 || s == Schedule::zb_h2 || s == Schedule::zb_v;
}

// Whether a schedule places a rank's two model chunks in a V (Qi et al. 2024 §4, ZB-V): chunk 0 of
// pipeline rank r is virtual stage r, chunk 1 virtual stage 2pp − 1 − r, so that the first and the
// last stage are both on rank 0 and the hand-off between the halves is local on rank pp − 1.
// Every other schedule with vpp chunks places chunk c of rank r at virtual stage c·pp + r.
constexpr bool v_placement(Schedule s) {
  return s == Schedule::zb_v;
}

// The schedule of a layout that names none, and what "1f1b" means with virtual stages:
// Megatron-LM's 1F1B with vpp > 1 is the interleaved 1F1B (Narayanan et al. 2021 §2.2).
constexpr Schedule implied_schedule(int vpp) {
  return vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
}

// Megatron-LM's default rank order, fastest-varying first.
inline constexpr std::string_view kDefaultRankOrder = "tp-cp-ep-dp-pp";

// A complete, resolved layout. dp counts every data-parallel replica (expert parallelism is carved
// out of it: ep divides dp, as in Megatron-Core's MoE layers).
struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;
  int zero = 0;              // ZeRO stage 0..3 (3 = FSDP full shard)
  int micro_batch = 1;       // sequences per micro-batch per data-parallel rank
  int num_microbatches = 1;  // per pipeline per step = global_batch / (micro_batch * dp)
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  int vpp = 1;  // model chunks per pipeline rank (virtual pipeline stages); 2 under zb-v
  Schedule schedule = Schedule::one_f_one_b;
  std::string rank_order = std::string(kDefaultRankOrder);
  // Layers of each virtual stage (pp·vpp entries, core/stage_split.h); empty: the even split.
  // Never all equal (canonical_split), so that one split has one form.
  std::vector<int> stages = {};

  int64_t world() const { return int64_t{dp} * tp * pp * cp; }
  int64_t global_batch() const { return int64_t{micro_batch} * num_microbatches * dp; }
};

bool operator==(const Layout&, const Layout&);
// Of every field operator== compares: equal layouts hash alike.
size_t hash_value(const Layout& l);

// What a user wrote: any field may be missing and is then defaulted or derived by resolve_layout.
struct LayoutSpec {
  std::optional<int> dp, tp, pp, cp, ep, zero, micro_batch, num_microbatches, vpp;
  std::optional<int64_t> global_batch;  // overrides Training::global_batch when given
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;
  std::optional<Schedule> schedule;
  std::optional<std::string> rank_order;
  std::optional<std::vector<int>> stages;  // layers per virtual stage, as given
  std::optional<Dtype> dtype;              // from a DeepSpeed config's bf16/fp16 sections
  std::optional<Fp8Recipe> fp8;            // from Megatron-LM's --fp8-format/--fp8-recipe
};

// "tp=8,pp=4,dp=32,cp=1,ep=1,zero=1,mbs=1,gbs=1536,sp=1,vpp=2,recompute=selective,schedule=1f1b".
// Keys: tp, pp, dp, cp, ep, zero, vpp, recompute, schedule, stages, and the pairs mbs|micro_batch,
// gbs|global_batch, gas|num_microbatches, sp|sequence_parallel (0, 1, true, false),
// order|rank_order. Items are comma-separated; `stages` takes a list of layer counts, one per
// virtual stage, which goes on over the items that follow it with no key ("stages=7,8,8,7").
// `source` names the origin in errors ("--layout").
LayoutSpec parse_layout_string(std::string_view s, const std::string& source = "--layout");

// Megatron-LM flags: --tensor-model-parallel-size/--tp, --pipeline-model-parallel-size/--pp,
// --context-parallel-size/--cp, --expert-model-parallel-size/--ep, --sequence-parallel,
// --micro-batch-size, --global-batch-size, --num-layers-per-virtual-pipeline-stage (needs the
// model's layer count) or --num-virtual-stages-per-pipeline-rank, --recompute-granularity,
// --recompute-activations (= selective), --recompute-method uniform and --recompute-num-layers 1
// (what full recompute is priced as; other values are refused), --use-distributed-optimizer
// (= ZeRO-1), --use-torch-fsdp2 (= ZeRO-3), --bf16/--fp16, DeepSpeed's --zero-stage, and the
// uneven split: --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers,
// --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split and
// --pipeline-model-parallel-layout (core/stage_split.h).
// "--flag value" and "--flag=value"; unknown flags are errors. Errors name the flag.
LayoutSpec parse_megatron_flags(const std::vector<std::string>& args, const Model& model);

// The words of a flag string given as one argument (--megatron "--tp 8 --pp 4"), split at white
// space as a shell splits unquoted words.
std::vector<std::string> split_words(const std::string& s);

// A DeepSpeed config: zero_optimization.stage, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, train_batch_size, bf16.enabled / fp16.enabled ("auto" leaves a value
// to be derived). DeepSpeed's runtime-only keys are skipped by a named list (layout_deepspeed.cpp);
// any other key is an error, and so is offloading to cpu/nvme, which is not modelled.
LayoutSpec layout_from_deepspeed(const nlohmann::json& ds, const std::string& file);

// Fields set in `over` replace those in `base` (for --fix and for flags on top of a file).
LayoutSpec merge(LayoutSpec base, const LayoutSpec& over);

// Fills what was left out (dp = world / (tp·pp·cp), global batch from `training`, number of
// micro-batches, schedule = interleaved when vpp > 1, the split of layers over the virtual stages:
// even when pp·vpp divides the layers, else balanced_split's) and validates. Updates
// training.global_batch when the spec gives one (or only num_microbatches), training.dtype and
// grad_dtype when it gives a dtype, and training.fp8 when it gives an FP8 recipe; `training` is
// left as it was when an error is thrown.
Layout resolve_layout(const LayoutSpec& spec, const Model& model, const Cluster& cluster,
                      Training& training, const std::string& source);

// Every rule a layout must satisfy on a model and cluster, with precise errors naming `source`
// and the field: tp divides num_attention_heads and num_key_value_heads, dp·tp·pp·cp equals the
// device count, global batch divisible by micro_batch·dp, pp·vpp divides the layers, ep divides
// the experts and dp, cp·2 divides the sequence, zero in 0..3, vpp > 1 only with interleaved.
// Layers: pp·vpp divides them, or `stages` splits them (check_split).
// Also: tp divides intermediate_size (and the experts'), sequence parallelism needs tp > 1 and tp
// dividing seq_len / cp, interleaving needs num_microbatches % pp == 0, seq_len fits the model.
void validate_layout(const Layout& l, const Model& model, const Cluster& cluster,
                     const Training& training, const std::string& source);
// The first of those rules the layout breaks, returned instead of thrown: the planner asks it of
// every candidate, and ~10^5 of them break one.
std::optional<InputError> broken_layout_rule(const Layout& l, const Model& model,
                                             const Cluster& cluster, const Training& training,
                                             const std::string& source);

// The compact string (every field, dp included; stages only when uneven, last), which
// parse_layout_string reads back.
std::string to_string(const Layout& l);
nlohmann::json layout_to_json(const Layout& l);
// Every key required but `stages` (written only when uneven); errors name fields "layout.*".
// Checked against a model by validate_layout.
Layout layout_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace shardplan
