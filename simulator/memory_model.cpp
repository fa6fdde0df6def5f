#include "simulator/memory_model.h"

#include <algorithm>

#include "core/schedule.h"
#include "core/zero_units.h"
#include "simulator/activation_memory.h"
#include "simulator/comm_volume.h"
#include "simulator/pipeline_model.h"
#include "simulator/rank_shape.h"

namespace shardplan {

ModelStateBytes model_state_bytes(int64_t params, int64_t shard, int zero, const Training& t) {
  const int64_t fp32 = dtype_bytes(Dtype::fp32);
  const int64_t e = dtype_bytes(t.dtype);
  // Under mixed precision the optimizer keeps an fp32 master copy (Micikevicius et al. 2018);
  // Adam keeps two fp32 moments (ZeRO §3.1: K = 12 bytes per parameter with the master copy).
  const int64_t master = t.master_weights && e < fp32 ? fp32 : 0;
  const int64_t moments = t.optimizer == Optimizer::adam ? 2 * fp32 : 0;
  const int64_t optimizer_elements = zero >= 1 ? shard : params;
  ModelStateBytes b;
  b.parameters = e * (zero >= 3 ? shard : params);
  b.gradients = dtype_bytes(t.grad_dtype) * (zero >= 2 ? shard : params);
  b.master_weights = master * optimizer_elements;
  b.optimizer_moments = moments * optimizer_elements;
  return b;
}

namespace {

ModelStateBytes operator+(const ModelStateBytes& a, const ModelStateBytes& b) {
  return {a.parameters + b.parameters, a.gradients + b.gradients,
          a.master_weights + b.master_weights, a.optimizer_moments + b.optimizer_moments};
}

// ZeRO-3 keeps the full parameters of the unit being computed and of the one prefetched, plus the
// unit's full gradients until they are reduce-scattered (Zhao et al. 2023, PyTorch FSDP §3.3–3.4:
// the rate limiter allows two all-gathers in flight), each padded to a multiple of the ranks it is
// sharded over (core/zero_units.h: FSDP's unsharded FlatParameter keeps its padding). The
// embedding and the head are units too.
int64_t zero3_gathered_bytes(const Model& m, const Training& t, const Layout& l,
                             const StageLayers& s) {
  const int64_t ranks = dense_replicas(l);
  const auto padded = [&](int64_t n) { return shard_size(n, ranks) * ranks; };
  int64_t unit = 0;
  if (s.dense_layers > 0) unit = padded(layer_param_shard(m, l, false).total());
  if (s.moe_layers > 0) unit = std::max(unit, padded(layer_param_shard(m, l, true).total()));
  if (s.first || s.last) unit = std::max(unit, padded(word_embedding_shard(m, l.tp)));
  return unit * (2 * dtype_bytes(t.dtype) + dtype_bytes(t.grad_dtype));
}

}  // namespace

ModelStateBytes stage_model_state_bytes(const Model& m, const Training& t, const Layout& l,
                                        const StageLayers& s) {
  const ParamShard p = param_shard(m, l, s);
  // Dense weights sharded per ZeRO unit (core/zero_units.h); expert weights, which the executor
  // does not run, as one unit over the expert data-parallel group.
  const std::vector<int64_t> units = zero_unit_params(m, l, s.stage);
  return model_state_bytes(p.dense(), zero_shard_params(units, dense_replicas(l)), l.zero, t) +
         model_state_bytes(p.experts, shard_size(p.experts, expert_replicas(l)), l.zero, t);
}

RankMemory rank_memory(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                       const Device& d, const ExecutionOptions& x) {
  RankMemory r;
  r.stage = s.stage;
  const ParamShard p = param_shard(m, l, s);
  r.state = stage_model_state_bytes(m, t, l, s);

  const RankShape shape = rank_shape(t, l);
  const int64_t chunks = inflight_chunk_microbatches(l, s.stage);
  r.inflight_microbatches = chunks;
  const auto layer = [&](bool moe, Recompute rc) {
    return layer_activation_bytes(m, t.dtype, shape, moe, rc, x);
  };
  const int64_t stage_layers_bytes =
      s.dense_layers * layer(false, l.recompute) + s.moe_layers * layer(true, l.recompute);
  // A rank holds vpp chunks of the stage's layers; `chunks` micro-batches of one chunk each (of
  // the chunks' mean size where an uneven split gives them different layers).
  r.layer_activations_bytes = chunks * stage_layers_bytes / l.vpp;
  if (s.first)
    r.embedding_activations_bytes = chunks * input_layer_activation_bytes(m, shape, x) / l.vpp;
  if (l.recompute != Recompute::none) {
    // The layer being back-propagated is materialised again in full.
    for (bool moe : {false, true})
      if ((moe ? s.moe_layers : s.dense_layers) > 0)
        r.recompute_working_bytes = std::max(r.recompute_working_bytes,
                                             layer(moe, Recompute::none) - layer(moe, l.recompute));
  }
  if (s.last) {
    // The last stage runs each micro-batch's backward right after its forward unless the
    // schedule runs every forward first.
    const int64_t held = runs_all_forwards_first(l) ? l.num_microbatches : 1;
    r.output_activations_bytes = held * output_layer_activation_bytes(m, t.dtype, shape);
    r.logits_bytes = held * loss_softmax_bytes(m, shape) + logits_bytes(m, t.dtype, shape);
  }
  if (l.zero == 3) r.zero3_gathered_bytes = zero3_gathered_bytes(m, t, l, s);
  if (l.zero == 2) {
    // One bucket of full gradients awaits its reduce-scatter.
    const int64_t dense = std::min(p.dense(), grad_bucket_params(l));
    const int64_t experts = std::min(p.experts, grad_bucket_params(l));
    r.comm_buffer_bytes = dtype_bytes(t.grad_dtype) * (dense + experts);
  }
  r.runtime_reserved_bytes = d.reserved_bytes();
  r.capacity_bytes = d.memory_bytes();
  return r;
}

std::array<MemoryItem, 12> memory_items(const RankMemory& r) {
  return {{{"runtime_reserved", r.runtime_reserved_bytes},
           {"parameters", r.state.parameters},
           {"gradients", r.state.gradients},
           {"master_weights", r.state.master_weights},
           {"optimizer_moments", r.state.optimizer_moments},
           {"comm_buffers", r.comm_buffer_bytes},
           {"zero3_gathered_parameters", r.zero3_gathered_bytes},
           {"layer_activations", r.layer_activations_bytes},
           {"embedding_activations", r.embedding_activations_bytes},
           {"output_activations", r.output_activations_bytes},
           {"logits", r.logits_bytes},
           {"recompute_working", r.recompute_working_bytes}}};
}

std::optional<MemoryOverflow> first_overflow(const RankMemory& r) {
  int64_t used = 0;
  for (const MemoryItem& item : memory_items(r)) {
    if (used + item.bytes > r.capacity_bytes)
      return MemoryOverflow{item.name, item.bytes, std::max<int64_t>(0, r.capacity_bytes - used)};
    used += item.bytes;
  }
  return std::nullopt;
}

WorstStageMemory worst_stage_memory(const Model& m, const Training& t, const Layout& l,
                                    const Device& d, const ExecutionOptions& x) {
  WorstStageMemory worst;
  for (int stage = 0; stage < l.pp; ++stage) {
    RankMemory r = rank_memory(m, t, l, stage_layers(m, l, stage), d, x);
    if (stage == 0 || r.peak_bytes() > worst.memory.peak_bytes()) worst = {stage, std::move(r)};
  }
  return worst;
}

}  // namespace shardplan
