#include "simulator/memory_model.h"

#include <algorithm>
#include <tuple>

#include "core/schedule.h"
#include "core/zero_units.h"
#include "simulator/activation_memory.h"
#include "simulator/comm_volume.h"
#include "simulator/compute_model.h"
#include "simulator/fp8_linears.h"
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
          a.master_weights + b.master_weights, a.optimizer_moments + b.optimizer_moments,
          a.fp8_weights + b.fp8_weights};
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
  const std::vector<int64_t> units = zero_unit_params(m, t, l, s.stage);
  return model_state_bytes(p.dense(), zero_shard_params(units, dense_replicas(l)), l.zero, t) +
         model_state_bytes(p.experts, shard_size(p.experts, expert_replicas(l)), l.zero, t);
}

ActivationSizes activation_sizes(const Model& m, const Training& t, const Layout& l,
                                 const ExecutionOptions& x) {
  const RankShape shape = rank_shape(t, l);
  const auto layer = [&](bool moe, Recompute rc) {
    return layer_activation_bytes(m, t.dtype, shape, moe, rc, x, t.fp8);
  };
  ActivationSizes a;
  a.dense = layer(false, l.recompute);
  a.dense_whole = layer(false, Recompute::none);
  a.dense_backward = layer_backward_buffers(m, t.dtype, shape, false).total();
  const bool split = splits_backward(l.schedule);
  if (split)
    a.dense_weight_grad = layer_weight_grad_tensors(m, t.dtype, shape, false, t.fp8).total();
  if (m.is_moe()) {  // a dense model's stages hold no MoE layer
    a.moe = layer(true, l.recompute);
    a.moe_whole = layer(true, Recompute::none);
    a.moe_backward = layer_backward_buffers(m, t.dtype, shape, true).total();
    if (split)
      a.moe_weight_grad = layer_weight_grad_tensors(m, t.dtype, shape, true, t.fp8).total();
  }
  a.input = input_layer_activation_bytes(m, shape, x);
  a.output = output_layer_activation_bytes(m, t.dtype, shape);
  a.loss = loss_memory(m, t.dtype, shape, x.cross_entropy);
  return a;
}

namespace {

// rank_memory with the stage's model state and the layout's layer activations already sized.
RankMemory rank_memory_of(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                          const Device& d, const ExecutionOptions& x, const ModelStateBytes& state,
                          const ActivationSizes& layer) {
  RankMemory r;
  r.stage = s.stage;
  r.state = state;
  // Transformer Engine's FP8 copies of the stage's linear weights where it keeps them over the
  // step (norms, router, embedding and head stay in the compute dtype).
  if (fp8_weights_cached(t, l, x)) {
    const ParamShard p = param_shard(m, l, s);
    r.state.fp8_weights =
        static_cast<int64_t>(static_cast<double>(p.attention + p.mlp + p.experts) *
                             fp8_copies_bytes(t.fp8, fp8_gemms_tn_only(d)));
  }

  const RankShape shape = rank_shape(t, l);
  const int64_t chunks = inflight_chunk_microbatches(l, s.stage);
  r.inflight_microbatches = chunks;
  const int64_t stage_layers_bytes = s.dense_layers * layer.dense + s.moe_layers * layer.moe;
  // A rank holds vpp chunks of the stage's layers; `chunks` micro-batches of one chunk each (of
  // the chunks' mean size where an uneven split gives them different layers).
  r.layer_activations_bytes = chunks * stage_layers_bytes / l.vpp;
  if (splits_backward(l.schedule)) {
    // Some of them have run their B and hold only what their W reads.
    const int64_t waiting = s.dense_layers * layer.dense_weight_grad +
                            s.moe_layers * layer.moe_weight_grad;
    r.layer_activations_bytes = 0;
    for (const HeldMicrobatches& h : split_backward_peaks(l, s.stage))
      r.layer_activations_bytes =
          std::max(r.layer_activations_bytes,
                   (h.whole * stage_layers_bytes + h.waiting_weight_grad * waiting) / l.vpp);
  }
  if (s.first) r.embedding_activations_bytes = chunks * layer.input / l.vpp;
  if (l.recompute != Recompute::none) {
    // The layer being back-propagated is materialised again in full.
    for (const auto& [layers, whole, kept] :
         {std::tuple{s.dense_layers, layer.dense_whole, layer.dense},
          std::tuple{s.moe_layers, layer.moe_whole, layer.moe}})
      if (layers > 0) r.recompute_working_bytes = std::max(r.recompute_working_bytes, whole - kept);
  }
  // What one micro-batch's backward frees on this stage: its activations and the loss's buffers.
  int64_t backward_frees = (r.layer_activations_bytes + r.embedding_activations_bytes) / chunks +
                           r.recompute_working_bytes;
  // What the last stage's loss frees before its layers' backward (its peak so far is the loss's).
  int64_t loss_frees = 0;
  if (s.last) {
    // The last stage runs each micro-batch's backward right after its forward unless the
    // schedule runs every forward first.
    const int64_t held = runs_all_forwards_first(l) ? l.num_microbatches : 1;
    r.output_activations_bytes = held * layer.output;
    r.logits_bytes = held * layer.loss.saved + layer.loss.transient;
    loss_frees = layer.output + layer.loss.saved + layer.loss.transient;
    backward_frees += loss_frees;
  }
  // A stage's first backward holds the layer's gradients beside every activation in flight; the
  // last stage's, beside one micro-batch's loss buffers fewer.
  int64_t layer_backward = 0;
  if (s.dense_layers > 0) layer_backward = layer.dense_backward;
  if (s.moe_layers > 0) layer_backward = std::max(layer_backward, layer.moe_backward);
  r.backward_buffers_bytes = std::max<int64_t>(0, layer_backward - loss_frees);
  if (l.zero == 3) r.zero3_gathered_bytes = zero3_gathered_bytes(m, t, l, s);
  if (l.zero == 2) {
    // One bucket of full gradients awaits its reduce-scatter.
    const ParamShard p = param_shard(m, l, s);
    const int64_t dense = std::min(p.dense(), grad_bucket_params(t, l));
    const int64_t experts = std::min(p.experts, grad_bucket_params(t, l));
    r.comm_buffer_bytes = dtype_bytes(t.grad_dtype) * (dense + experts);
  }
  // The framework's own buffers (core/framework.h).
  if (x.grad_bucket_copy && l.zero == 0 && l.dp > 1) r.grad_bucket_copy_bytes = state.parameters;
  if (shape.sequence_parallel)
    r.sp_gather_buffer_bytes =
        x.sp_gather_buffers * dtype_bytes(t.dtype) * shape.tokens() * m.hidden;
  // At the end of a backward its buffers are gone and every parameter's gradient is there; the
  // peak counted at the loss's forward, or at the layers' backward, held those buffers instead, so
  // the gradients raise it by what exceeds them. The frameworks that hold them (nanotron,
  // DeepSpeed's BF16_Optimizer) run neither ZeRO-3 (whose parameters are shards) nor virtual
  // stages (whose backward makes one chunk's gradients). Sizes, not dtypes, are compared: fp16
  // compute with 16-bit gradients holds nothing twice.
  // Kept until the next backward starts (param_grads_kept; BF16_Optimizer runs at ZeRO-0/1 only),
  // they are there at the end of every forward, beside the micro-batches in flight at their most,
  // where neither the backward's buffers nor a recomputed layer is.
  if (x.param_grads_held && dtype_bytes(t.grad_dtype) != dtype_bytes(t.dtype) && l.zero < 3 &&
      l.vpp == 1)
    r.param_grads_bytes =
        x.param_grads_kept && l.zero <= 1
            ? std::max<int64_t>(
                  0, state.parameters - r.backward_buffers_bytes - r.recompute_working_bytes)
            : std::max<int64_t>(0, state.parameters - backward_frees - r.backward_buffers_bytes);
  // The step's transients (the reduction's bucket, the optimizer's fp32 copy of the gradients, the
  // parameter all-gather's flattened copy) exist when every activation and loss buffer is gone;
  // they raise the peak by what exceeds them.
  r.step_grad_copy_bytes =
      std::max<int64_t>(0, step_grad_copy_extra_bytes(t, l, state, x) - r.activations_bytes() -
                               r.logits_bytes - r.backward_buffers_bytes - r.param_grads_bytes);
  r.runtime.cuda_context_bytes = d.reserved_bytes();
  r.runtime_reserved_bytes = r.runtime.total();
  r.capacity_bytes = d.memory_bytes();
  return r;
}

}  // namespace

StepGradCopy step_grad_copy(const Training& t, const Layout& l, const ModelStateBytes& state,
                            const ExecutionOptions& x) {
  const int64_t fp32 = dtype_bytes(Dtype::fp32);
  const int64_t e = dtype_bytes(t.grad_dtype);
  // DeepSpeed runs FP16_Optimizer at ZeRO-0 for fp16 only (bf16 gets its BF16_Optimizer).
  if (!x.step_grad_copy || e >= fp32 || l.zero >= 3 || state.master_weights == 0 ||
      (l.zero == 0 && t.dtype != Dtype::fp16))
    return {};
  // The elements the rank's master weights update: its partition under ZeRO-1/2.
  const int64_t elements = state.master_weights / fp32;
  return {.partition_gradients = e * elements,
          .intermediate = (l.zero == 0 ? fp32 : e) * elements,
          .fp32 = fp32 * elements};
}

ParamGatherCopy param_gather_copy(const Layout& l, const ModelStateBytes& state,
                                  const ExecutionOptions& x) {
  const int64_t members = int64_t{l.dp} * l.cp;
  if (!x.param_gather_copy || l.zero < 1 || l.zero > 2 || members == 1) return {};
  return {.input = state.parameters / members, .outputs = state.parameters, .members = members};
}

int64_t pipeline_reduce_bucket_bytes(const Training& t, const Layout& l,
                                     const ExecutionOptions& x) {
  if (x.reduce_bucket_elements == 0 || l.pp == 1 || l.zero < 1 || l.zero > 2 ||
      dtype_bytes(t.grad_dtype) != dtype_bytes(t.dtype))
    return 0;
  return x.reduce_bucket_elements * dtype_bytes(t.dtype);
}

int64_t step_grad_copy_extra_bytes(const Training& t, const Layout& l, const ModelStateBytes& state,
                                   const ExecutionOptions& x) {
  const ParamGatherCopy g = param_gather_copy(l, state, x);
  const StepGradCopy c = step_grad_copy(t, l, state, x);
  // Gradients outside the partition are freed first (ZeRO-1); the copies come beside the rest.
  const int64_t step =
      c.fp32 == 0 ? 0 : c.partition_gradients - state.gradients + c.intermediate + c.fp32;
  return std::max({pipeline_reduce_bucket_bytes(t, l, x), step, g.input + g.outputs});
}

RankMemory rank_memory(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                       const Device& d, const ExecutionOptions& x) {
  return rank_memory_of(m, t, l, s, d, x, stage_model_state_bytes(m, t, l, s),
                        activation_sizes(m, t, l, x));
}

std::vector<StageState> stage_states(const Model& m, const Training& t, const Layout& l) {
  std::vector<StageState> out;
  out.reserve(static_cast<size_t>(l.pp));
  for (const StageLayers& s : every_stage_layers(m, l))
    out.push_back({s, stage_model_state_bytes(m, t, l, s)});
  return out;
}

void StageStateCache::select_shape(const Layout& l) {
  const std::array<int, 5> shape{l.dp, l.tp, l.pp, l.cp, l.ep};
  if (shape == shape_ && l.rank_order == rank_order_) return;
  shape_ = shape;
  rank_order_ = l.rank_order;
  entries_.clear();
  activations_.clear();
  least_runtime_.reset();
  runtime_.assign(static_cast<size_t>(l.pp), std::nullopt);
}

const RuntimeMemory& StageStateCache::runtime(const Cluster& c, const Layout& l, int stage) {
  select_shape(l);
  std::optional<RuntimeMemory>& r = runtime_[static_cast<size_t>(stage)];
  if (!r) r = runtime_memory(c, l, stage);
  return *r;
}

int64_t StageStateCache::least_runtime_bytes(const Cluster& c, const Layout& l) {
  select_shape(l);
  if (!least_runtime_) {
    least_runtime_ = runtime(c, l, 0).total();
    for (int stage = 1; stage < l.pp; ++stage)
      least_runtime_ = std::min(*least_runtime_, runtime(c, l, stage).total());
  }
  return *least_runtime_;
}

const ActivationSizes& StageStateCache::activations(const Model& m, const Training& t,
                                                    const Layout& l, const ExecutionOptions& x) {
  select_shape(l);
  const std::array<int, 4> key{l.micro_batch, l.sequence_parallel ? 1 : 0,
                               static_cast<int>(l.recompute), splits_backward(l.schedule) ? 1 : 0};
  for (auto a = activations_.rbegin(); a != activations_.rend(); ++a)
    if (a->key == key) return a->sizes;
  return activations_.emplace_back(Activations{key, activation_sizes(m, t, l, x)}).sizes;
}

const std::vector<StageState>& StageStateCache::stages(const Model& m, const Training& t,
                                                       const Layout& l) {
  select_shape(l);
  // Latest first: the enumeration runs the ZeRO stages of one split in a row.
  for (auto e = entries_.rbegin(); e != entries_.rend(); ++e)
    if (e->vpp == l.vpp && e->zero == l.zero && e->v_placed == v_placement(l.schedule) &&
        e->split == l.stages)
      return e->stages;
  return entries_
      .emplace_back(Entry{l.vpp, l.zero, v_placement(l.schedule), l.stages, stage_states(m, t, l)})
      .stages;
}

std::array<MemoryItem, 21> memory_items(const RankMemory& r) {
  return {{{"cuda_context", r.runtime.cuda_context_bytes},
           {"cublas_workspace", r.runtime.cublas_workspace_bytes},
           {"nccl_buffers", r.runtime.nccl_buffer_bytes},
           {"parameters", r.state.parameters},
           {"gradients", r.state.gradients},
           {"master_weights", r.state.master_weights},
           {"optimizer_moments", r.state.optimizer_moments},
           {"fp8_weights", r.state.fp8_weights},
           {"comm_buffers", r.comm_buffer_bytes},
           {"grad_bucket_copy", r.grad_bucket_copy_bytes},
           {"sp_gather_buffers", r.sp_gather_buffer_bytes},
           {"zero3_gathered_parameters", r.zero3_gathered_bytes},
           {"layer_activations", r.layer_activations_bytes},
           {"embedding_activations", r.embedding_activations_bytes},
           {"output_activations", r.output_activations_bytes},
           {"logits", r.logits_bytes},
           {"recompute_working", r.recompute_working_bytes},
           {"backward_buffers", r.backward_buffers_bytes},
           {"param_grads", r.param_grads_bytes},
           {"step_grad_copy", r.step_grad_copy_bytes},
           {"allocator_cache", r.allocator_cache_bytes}}};
}

void add_runtime_memory(RankMemory& stage, const Cluster& c, const Layout& l,
                        StageStateCache* cache) {
  stage.runtime = cache ? cache->runtime(c, l, stage.stage) : runtime_memory(c, l, stage.stage);
  stage.runtime_reserved_bytes = stage.runtime.total();
}

void add_runtime_memory(std::vector<RankMemory>& stages, const Cluster& c, const Layout& l,
                        StageStateCache* cache) {
  for (RankMemory& r : stages) add_runtime_memory(r, c, l, cache);
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

namespace {

bool same_items(const StageState& a, const StageState& b) {
  return a.layers.dense_layers == b.layers.dense_layers &&
         a.layers.moe_layers == b.layers.moe_layers && a.layers.first == b.layers.first &&
         a.layers.last == b.layers.last && a.state == b.state;
}

// The stages' layers and model state from `cache`, or sized into `uncached`.
const std::vector<StageState>& cached_or(std::vector<StageState>& uncached, const Model& m,
                                         const Training& t, const Layout& l,
                                         StageStateCache* cache) {
  return cache ? cache->stages(m, t, l) : (uncached = stage_states(m, t, l));
}

// The layout's activation sizes from `cache`, or sized into `uncached`.
const ActivationSizes& activations_or(std::optional<ActivationSizes>& uncached, const Model& m,
                                      const Training& t, const Layout& l, const ExecutionOptions& x,
                                      StageStateCache* cache) {
  return cache ? cache->activations(m, t, l, x) : uncached.emplace(activation_sizes(m, t, l, x));
}

}  // namespace

std::vector<RankMemory> stage_memories(const Model& m, const Training& t, const Layout& l,
                                       const Device& d, const ExecutionOptions& x,
                                       StageStateCache* cache) {
  std::vector<StageState> uncached;
  const std::vector<StageState>& stages = cached_or(uncached, m, t, l, cache);
  std::optional<ActivationSizes> sized;
  const ActivationSizes& layer = activations_or(sized, m, t, l, x, cache);
  std::vector<RankMemory> out;
  out.reserve(stages.size());
  for (const StageState& s : stages)
    out.push_back(rank_memory_of(m, t, l, s.layers, d, x, s.state, layer));
  return out;
}

WorstStageMemory worst_stage_memory(const Model& m, const Training& t, const Layout& l,
                                    const Device& d, const ExecutionOptions& x,
                                    StageStateCache* cache, std::optional<int64_t> stop_above) {
  std::vector<StageState> uncached;
  const std::vector<StageState>& stages = cached_or(uncached, m, t, l, cache);
  std::optional<ActivationSizes> sized;
  const ActivationSizes& layer = activations_or(sized, m, t, l, x, cache);
  WorstStageMemory worst;
  for (size_t i = 0; i < stages.size(); ++i) {
    const int stage = static_cast<int>(i);
    // A stage with the layers and model state of the one before it and no more micro-batches in
    // flight needs no item more (every item but the activations depends on those alone), so it
    // cannot be the worst: the first of equal peaks is.
    // (Under a split backward later stages hold fewer micro-batches whole and more waiting for
    // their W, which may hold more: each is priced.)
    if (i > 0 && same_items(stages[i], stages[i - 1]) && !splits_backward(l.schedule) &&
        inflight_chunk_microbatches(l, stage) <= inflight_chunk_microbatches(l, stage - 1))
      continue;
    RankMemory r = rank_memory_of(m, t, l, stages[i].layers, d, x, stages[i].state, layer);
    const bool over = stop_above && r.peak_bytes() > *stop_above;
    if (over || i == 0 || r.peak_bytes() > worst.memory.peak_bytes()) {
      worst.stage = stage;
      worst.memory = r;
    }
    if (over) {
      worst.complete = false;
      break;
    }
  }
  return worst;
}

}  // namespace shardplan
