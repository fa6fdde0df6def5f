// From what a user wrote to a complete layout (resolve_layout), and every rule a layout must meet
// on a model, cluster and training (validate_layout). Each rule is one error naming the source,
// the field and the numbers involved; the rules are Megatron-LM's where it has one.
#include <fmt/format.h>

#include <limits>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/layout.h"
#include "core/placement.h"
#include "core/stage_split.h"

namespace shardplan {

namespace {

// A broken rule: returned, not thrown, so that the planner asks every candidate without unwinding
// (validate_layout throws it).
using Broken = std::optional<InputError>;

InputError rule(const std::string& source, const char* field, std::string reason,
                std::string hint = "") {
  return InputError(source, field, std::move(reason), std::move(hint));
}

Broken check_positive(const Layout& l, const std::string& source) {
  const std::pair<const char*, int> counts[] = {{"layout.dp", l.dp},
                                                {"layout.tp", l.tp},
                                                {"layout.pp", l.pp},
                                                {"layout.cp", l.cp},
                                                {"layout.ep", l.ep},
                                                {"layout.vpp", l.vpp},
                                                {"layout.micro_batch", l.micro_batch},
                                                {"layout.num_microbatches", l.num_microbatches}};
  for (const auto& [field, v] : counts)
    if (v <= 0) return rule(source, field, fmt::format("must be positive, found {}", v));
  if (l.zero < 0 || l.zero > 3)
    return rule(source, "layout.zero", fmt::format("must be 0, 1, 2 or 3, found {}", l.zero));
  return std::nullopt;
}

// Megatron-LM: num_microbatches = global_batch_size / (micro_batch_size × data_parallel_size),
// which must divide exactly (megatron/core/num_microbatches_calculator.py).
Broken check_batch_divides(int64_t global_batch, const Layout& l, const std::string& source) {
  const int64_t per_microbatch = int64_t{l.micro_batch} * l.dp;
  if (global_batch % per_microbatch != 0)
    return rule(source, "layout.global_batch",
                fmt::format("{} is not divisible by micro_batch × dp = {} × {} = {}", global_batch,
                            l.micro_batch, l.dp, per_microbatch));
  return std::nullopt;
}

Broken check_world(const Layout& l, const Cluster& c, const std::string& source) {
  if (l.world() != c.world())
    return rule(
        source, "layout.dp",
        fmt::format(
            "dp × tp × pp × cp = {} × {} × {} × {} = {} does not equal the {} devices of the "
            "cluster ({} nodes × {})",
            l.dp, l.tp, l.pp, l.cp, l.world(), c.world(), c.nodes, c.devices_per_node),
        "leave dp out to derive it: dp = devices / (tp × pp × cp)");
  return std::nullopt;
}

// Megatron-Core splits attention heads, key/value heads (query groups) and the MLP's
// intermediate size over tp with divide(), which asserts exact division.
Broken check_tensor_parallel(const Layout& l, const Model& m, const std::string& source) {
  const std::pair<const char*, int64_t> split[] = {
      {"num_attention_heads", m.num_heads},
      {"num_key_value_heads", m.num_kv_heads},
      {"intermediate_size", m.ffn_hidden},
      {"moe_intermediate_size", m.moe.expert_ffn_hidden}};
  for (const auto& [name, size] : split)
    if (size % l.tp != 0)
      return rule(source, "layout.tp", fmt::format("{} does not divide {}={}", l.tp, name, size));
  if (l.sequence_parallel && l.tp == 1)
    return rule(source, "layout.sequence_parallel", "needs tp > 1, found tp=1",
                "sequence parallelism splits the tensor-parallel region's activations over tp");
  return std::nullopt;
}

Broken check_batch(const Layout& l, const Training& t, const std::string& source) {
  if (Broken e = check_batch_divides(t.global_batch, l, source)) return e;
  if (l.global_batch() != t.global_batch)
    return rule(
        source, "layout.num_microbatches",
        fmt::format("micro_batch × num_microbatches × dp = {} × {} × {} = {} does not equal the "
                    "global batch {}",
                    l.micro_batch, l.num_microbatches, l.dp, l.global_batch(), t.global_batch),
        "DeepSpeed's rule: train_batch_size = train_micro_batch_size_per_gpu × "
        "gradient_accumulation_steps × data-parallel size");
  return std::nullopt;
}

// A framework that splits the layers itself (Training::layer_split) runs its own split, empty
// ranks after the layers included, and no virtual stages.
Broken check_framework_split(const Layout& l, const Model& m, const std::string& source) {
  if (l.vpp > 1)
    return rule(
        source, "layout.vpp",
        fmt::format("is {}, but the framework splits the layers itself and runs no interleaved "
                    "pipeline",
                    l.vpp),
        "use vpp=1");
  const std::vector<int> own = cost_balanced_split(m, l.pp);
  if (canonical_split(own) != l.stages)
    return rule(source, "layout.stages",
                fmt::format("is {}, but the framework splits the layers itself: stages={}",
                            l.stages.empty() ? "even" : split_string(l.stages), split_string(own)),
                "leave stages out");
  return std::nullopt;
}

// Megatron-LM (arguments.py, schedules.py): layers split over pp·vpp model chunks, evenly unless
// the layout gives each chunk's layers (check_split); virtual stages only with pp > 1 and the
// interleaved schedule, which needs num_microbatches to be a multiple of pp; a split backward
// (ZB-H1, ZB-H2) with ZeRO-0/1 and without full recomputation.
Broken check_pipeline(const Layout& l, const Model& m, const Training& t,
                      const std::string& source) {
  if (v_placement(l.schedule)) {
    const std::string_view schedule = enum_name(l.schedule, kScheduleNames);
    if (l.pp == 1)
      return rule(source, "layout.pp",
                  fmt::format("schedule={} places two chunks on each of pp > 1 ranks, found pp=1",
                              schedule));
    if (l.vpp != 2)
      return rule(source, "layout.vpp",
                  fmt::format("schedule={} places two chunks per rank in a V, found vpp={}",
                              schedule, l.vpp),
                  "set vpp=2 or leave vpp out");
  }
  if (l.vpp > 1 && l.pp == 1)
    return rule(source, "layout.vpp", fmt::format("vpp={} needs pp > 1, found pp=1", l.vpp));
  const int64_t chunks = int64_t{l.pp} * l.vpp;
  if (t.layer_split == LayerSplit::cost_balanced && l.pp > 1) {
    if (Broken e = check_framework_split(l, m, source)) return e;
  } else if (!l.stages.empty()) {
    try {  // stage_split.h's rules throw
      check_split(l.stages, m, l, source);
    } catch (const InputError& e) {
      return e;
    }
  } else if (m.num_layers % chunks != 0) {
    const std::vector<int> balanced = chunks <= m.num_layers
                                          ? balanced_split(m.num_layers, static_cast<int>(chunks))
                                          : std::vector<int>{};
    return rule(source, l.vpp > 1 ? "layout.vpp" : "layout.pp",
                fmt::format("pp × vpp = {} × {} = {} does not divide num_hidden_layers={}", l.pp,
                            l.vpp, chunks, m.num_layers),
                balanced.empty()
                    ? ""
                    : "give each virtual stage's layers: stages=" + split_string(balanced));
  }
  const bool interleaved = l.schedule == Schedule::interleaved;
  if (l.vpp > 1 && !interleaved && !v_placement(l.schedule))
    return rule(source, "layout.schedule",
                fmt::format("vpp={} needs schedule=interleaved, found {}", l.vpp,
                            enum_name(l.schedule, kScheduleNames)));
  if (interleaved && l.vpp == 1)
    return rule(source, "layout.schedule", "interleaved needs vpp > 1, found vpp=1");
  if (interleaved && l.num_microbatches % l.pp != 0)
    return rule(source, "layout.num_microbatches",
                fmt::format("the interleaved schedule needs a multiple of pp={}, found {}", l.pp,
                            l.num_microbatches));
  if (!splits_backward(l.schedule)) return std::nullopt;
  const std::string schedule(enum_name(l.schedule, kScheduleNames));
  // W accumulates into the gradients of every micro-batch, which ZeRO-1 reduces once after the
  // last; ZeRO-2/3 reduce-scatter after each micro-batch's backward and ZeRO-3 frees a unit's
  // gradients after it, so a later W would find them gone (the zero-bubble implementations run
  // with Megatron-LM's distributed optimizer, ZeRO-1).
  if (l.zero > 1)
    return rule(source, "layout.zero",
                fmt::format("schedule={} defers weight gradients past the backward, which ZeRO-{} "
                            "reduces and frees after each micro-batch; use zero=0 or 1",
                            schedule, l.zero));
  // Full recomputation rebuilds a layer's activations inside its backward and drops them after:
  // W would need them kept, which is what full recomputation avoids.
  if (l.recompute == Recompute::full)
    return rule(
        source, "layout.recompute",
        fmt::format("schedule={} keeps each layer's inputs until its weight gradient, which full "
                    "recomputation does not; use recompute=none or selective",
                    schedule));
  return std::nullopt;
}

// Megatron-Core MoE: experts are split evenly over ep, and the expert-parallel group is carved
// out of the data-parallel one.
Broken check_experts(const Layout& l, const Model& m, const std::string& source) {
  if (l.ep == 1) return std::nullopt;
  if (!m.is_moe())
    return rule(source, "layout.ep",
                fmt::format("ep={} on a dense model (num_local_experts=0)", l.ep), "use ep=1");
  if (m.moe.num_experts % l.ep != 0)
    return rule(source, "layout.ep",
                fmt::format("{} does not divide num_local_experts={}", l.ep, m.moe.num_experts));
  if (l.dp % l.ep != 0)
    return rule(source, "layout.ep", fmt::format("{} does not divide dp={}", l.ep, l.dp),
                "expert parallelism is carved out of data parallelism");
  return std::nullopt;
}

Broken check_sequence(const Layout& l, const Model& m, const Training& t,
                      const std::string& source) {
  if (m.max_seq > 0 && t.seq_len > m.max_seq)
    return rule(
        source, "training.seq_len",
        fmt::format("{} exceeds max_position_embeddings={} of {}", t.seq_len, m.max_seq, m.name));
  // Megatron-LM's get_batch_on_this_cp_rank cuts the sequence into 2·cp chunks and gives rank i
  // chunks i and 2·cp−1−i, balancing the causal mask's work.
  if (l.cp > 1 && t.seq_len % (2 * l.cp) != 0)
    return rule(source, "layout.cp",
                fmt::format("2 × cp = {} does not divide seq_len={}", 2 * l.cp, t.seq_len),
                "load-balanced causal context parallelism splits the sequence into 2·cp chunks");
  // Sequence parallelism scatters each context-parallel rank's tokens over tp
  // (Megatron-Core's _split_along_first_dim asserts exact division).
  if (l.sequence_parallel && (t.seq_len / l.cp) % l.tp != 0)
    return rule(
        source, "layout.sequence_parallel",
        fmt::format(
            "tp={} does not divide the {} tokens per context-parallel rank (seq_len={} / cp={})",
            l.tp, t.seq_len / l.cp, t.seq_len, l.cp));
  return std::nullopt;
}

int derive_dp(const Layout& l, const Cluster& c, const std::string& source) {
  const int64_t model_parallel = int64_t{l.tp} * l.pp * l.cp;
  if (c.world() % model_parallel != 0)
    throw rule(
        source, "layout.dp",
        fmt::format(
            "cannot derive dp: tp × pp × cp = {} × {} × {} = {} does not divide the {} devices",
            l.tp, l.pp, l.cp, model_parallel, c.world()),
        "choose tp, pp and cp whose product divides the device count");
  return static_cast<int>(c.world() / model_parallel);
}

}  // namespace

Layout resolve_layout(const LayoutSpec& spec, const Model& model, const Cluster& cluster,
                      Training& training, const std::string& source) {
  Layout l;
  l.tp = spec.tp.value_or(1);
  l.pp = spec.pp.value_or(1);
  l.cp = spec.cp.value_or(1);
  l.ep = spec.ep.value_or(1);
  l.zero = spec.zero.value_or(0);
  l.micro_batch = spec.micro_batch.value_or(1);
  l.vpp = spec.vpp.value_or(spec.schedule && v_placement(*spec.schedule) ? 2 : 1);
  l.dp = spec.dp.value_or(1);
  l.num_microbatches = spec.num_microbatches.value_or(1);
  l.recompute = spec.recompute.value_or(Recompute::none);
  l.sequence_parallel = spec.sequence_parallel.value_or(false);
  // "vpp=2,schedule=1f1b" (docs/conventions.md's own example) is the interleaved 1F1B.
  l.schedule = spec.schedule.value_or(Schedule::one_f_one_b);
  if (l.schedule == Schedule::one_f_one_b) l.schedule = implied_schedule(l.vpp);
  l.rank_order = spec.rank_order.value_or(std::string(kDefaultRankOrder));
  if (Broken e = check_positive(l, source)) throw *e;
  if (!spec.dp) l.dp = derive_dp(l, cluster, source);
  // Layers that do not divide over the virtual stages go where they cost least (balanced_split);
  // a given split is checked as given and kept in its canonical form.
  const int64_t chunks = int64_t{l.pp} * l.vpp;
  if (spec.stages)
    l.stages = *spec.stages;
  else if (training.layer_split == LayerSplit::cost_balanced)
    l = split_as_run(l, model, training);
  else if (model.num_layers % chunks != 0 && chunks <= model.num_layers)
    l.stages = balanced_split(model.num_layers, static_cast<int>(chunks));

  Training t = training;
  if (spec.global_batch)
    t.global_batch = *spec.global_batch;
  else if (spec.num_microbatches && t.global_batch <= 0)
    t.global_batch = l.global_batch();
  if (t.global_batch <= 0)
    throw rule(source, "layout.global_batch", "not given",
               "give gbs= in the layout or global_batch in the training description");
  if (!spec.num_microbatches) {
    if (Broken e = check_batch_divides(t.global_batch, l, source)) throw *e;
    const int64_t n = t.global_batch / (int64_t{l.micro_batch} * l.dp);
    if (n > std::numeric_limits<int>::max())
      throw rule(source, "layout.num_microbatches", fmt::format("{} is out of range", n));
    l.num_microbatches = static_cast<int>(n);
  }
  // DeepSpeed's bf16/fp16 sections: weights, activations and gradients in that format.
  if (spec.dtype) t.dtype = t.grad_dtype = *spec.dtype;
  if (spec.fp8) t.fp8 = *spec.fp8;

  validate_layout(l, model, cluster, t, source);
  l.stages = canonical_split(std::move(l.stages));
  training = t;
  return l;
}

std::optional<InputError> broken_layout_rule(const Layout& l, const Model& model,
                                             const Cluster& cluster, const Training& training,
                                             const std::string& source) {
  // In order, each only once those before it hold (check_tensor_parallel divides by tp).
  if (Broken e = check_positive(l, source)) return e;
  if (Broken e = check_world(l, cluster, source)) return e;
  if (Broken e = check_tensor_parallel(l, model, source)) return e;
  if (Broken e = check_batch(l, training, source)) return e;
  if (Broken e = check_pipeline(l, model, training, source)) return e;
  if (Broken e = check_experts(l, model, source)) return e;
  if (Broken e = check_sequence(l, model, training, source)) return e;
  try {  // placement.h's rule throws
    validate_rank_order(l.rank_order, source);
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

void validate_layout(const Layout& l, const Model& model, const Cluster& cluster,
                     const Training& training, const std::string& source) {
  if (Broken e = broken_layout_rule(l, model, cluster, training, source)) throw *e;
}

}  // namespace shardplan
