// Memory one rank needs at its peak, itemised: model state (parameters, gradients, fp32 master
// weights, optimizer moments) divided as ZeRO divides it over the data-parallel group,
// activations of the micro-batches in flight, logits and loss buffers, ZeRO's gather buffers and
// communication buckets, and the runtime's reserve; whether it fits and which item overflows.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/param_shard.h"
#include "core/training.h"
#include "simulator/activation_memory.h"
#include "simulator/execution_options.h"
#include "simulator/runtime_memory.h"

namespace shardplan {

// Model state of `params` parameters replicated over the data-parallel ranks, of which one rank's
// ZeRO shard holds `shard` (padded: core/zero_units.h's zero_shard_params, ceil(n/dp) of each
// unit). ZeRO (Rajbhandari et al. 2020 §5): stage 1 partitions the optimizer state (fp32 master
// weights and Adam moments), stage 2 also the gradients, stage 3 (= FSDP full shard) also the
// parameters.
struct ModelStateBytes {
  int64_t parameters = 0;         // compute dtype
  int64_t gradients = 0;          // grad dtype
  int64_t master_weights = 0;     // fp32 copy, only under mixed precision
  int64_t optimizer_moments = 0;  // Adam: fp32 first and second moments
  // Transformer Engine's FP8 copies of the linear layers' weights, made at a step's first
  // micro-batch and kept where fp8_weights_cached (fp8_linears.h): fp8_copies_bytes each. Set by
  // rank_memory (stage_model_state_bytes leaves it 0).
  int64_t fp8_weights = 0;

  int64_t optimizer() const { return master_weights + optimizer_moments; }
  int64_t total() const { return parameters + gradients + optimizer() + fp8_weights; }
  bool operator==(const ModelStateBytes&) const = default;
};

ModelStateBytes model_state_bytes(int64_t params, int64_t shard, int zero, const Training& t);

// The model state of one rank of stage `s`: dense weights sharded per ZeRO unit over dp·cp, expert
// weights over dp/ep·cp.
ModelStateBytes stage_model_state_bytes(const Model& m, const Training& t, const Layout& l,
                                        const StageLayers& s);

// The peak of one rank of a pipeline stage (every tp, cp and dp rank of a stage needs the same).
struct RankMemory {
  int stage = 0;
  int64_t inflight_microbatches = 0;  // model-chunk micro-batches whose activations are held
  ModelStateBytes state;
  int64_t layer_activations_bytes = 0;      // the stage's layers × micro-batches in flight
  int64_t embedding_activations_bytes = 0;  // input layer (first stage)
  int64_t output_activations_bytes = 0;     // final norm and head inputs (last stage)
  int64_t recompute_working_bytes = 0;      // one layer's activations re-materialised in backward
  int64_t logits_bytes = 0;            // fp32 loss softmax and compute-dtype logits (last stage)
  int64_t zero3_gathered_bytes = 0;    // ZeRO-3 full parameters and gradients of live units
  int64_t comm_buffer_bytes = 0;       // gradient bucket awaiting its reduce-scatter (ZeRO-2)
  int64_t grad_bucket_copy_bytes = 0;  // ZeRO-0 DDP buckets apart from the gradients
  int64_t sp_gather_buffer_bytes = 0;  // the framework's kept sequence-parallel gather buffers
  // The gradients the layer being back-propagated holds beside the activations
  // (layer_backward_buffers), beyond the loss's buffers the last stage has freed by then.
  int64_t backward_buffers_bytes = 0;
  // Autograd's compute-dtype gradients of the stage's parameters, held at a backward's end
  // (core/framework.h: param_grads_held) beyond what that backward freed: the micro-batch's
  // activations and the loss's buffers; kept to the next backward (param_grads_kept), at the end
  // of every forward, beyond the backward's buffers and the recomputed layer.
  int64_t param_grads_bytes = 0;
  // The step's copies: the optimizer step's fp32 copy of the gradients and the copy it is made
  // from (step_grad_copy), or the parameter all-gather's flattened copy after it
  // (param_gather_copy), beyond the activations and buffers the backward held.
  int64_t step_grad_copy_bytes = 0;
  // What the caching allocator reserves beyond the tensors' peak: rounding, and cached blocks that
  // later, larger requests could not use (allocator_replay.h); 0 until replayed.
  int64_t allocator_cache_bytes = 0;
  // Outside the framework's tensors: CUDA context, cuBLAS workspaces, NCCL buffers; their total.
  // Before add_runtime_memory only the context (a lower bound, which the planner prunes on).
  RuntimeMemory runtime;
  int64_t runtime_reserved_bytes = 0;
  int64_t capacity_bytes = 0;

  int64_t activations_bytes() const {
    return layer_activations_bytes + embedding_activations_bytes + output_activations_bytes +
           recompute_working_bytes;
  }
  int64_t other_bytes() const {
    return logits_bytes + zero3_gathered_bytes + comm_buffer_bytes + grad_bucket_copy_bytes +
           sp_gather_buffer_bytes + backward_buffers_bytes + param_grads_bytes +
           step_grad_copy_bytes;
  }
  // What the training process allocates at its peak (PyTorch's max_memory_allocated).
  int64_t peak_bytes() const { return state.total() + activations_bytes() + other_bytes(); }
  // What its allocator reserves for that (max_memory_reserved).
  int64_t reserved_bytes() const { return peak_bytes() + allocator_cache_bytes; }
  bool fits() const { return reserved_bytes() + runtime_reserved_bytes <= capacity_bytes; }
};

// What an optimizer step that copies the gradients to fp32 (core/framework.h: step_grad_copy)
// allocates on a rank with model state `state`: beside the compute-dtype gradients of the rank's
// partition, an intermediate copy and from it the flat fp32 gradients; then the intermediate and
// the compute-dtype gradients are freed, and the fp32 gradients held until the step ends.
// DeepSpeed's FP16_Optimizer (ZeRO-0, deepspeed/runtime/fp16/fused_optimizer.py step) casts each
// gradient to fp32 (the intermediate), then concatenates the casts; its ZeRO-1/2 optimizer
// (deepspeed/runtime/zero/stage_1_and_2.py step) concatenates the partition's gradients (the
// intermediate), then casts that. All zero where the framework makes no copy, the gradients are
// fp32 (DeepSpeed's BF16_Optimizer), there is no master copy, at ZeRO-0 but for fp16 (only
// FP16_Optimizer copies), or under ZeRO-3 (its copies per sub-group are not modelled).
struct StepGradCopy {
  int64_t partition_gradients = 0;  // the partition's, in the gradient dtype
  int64_t intermediate = 0;
  int64_t fp32 = 0;
};
StepGradCopy step_grad_copy(const Training& t, const Layout& l, const ModelStateBytes& state,
                            const ExecutionOptions& x);
// What ZeRO-1/2's parameter all-gather copies after the step where the framework flattens
// (core/framework.h: param_gather_copy; nanotron src/nanotron/distributed.py
// all_gather_coalesced): the rank's updated shard, then one output per member of the gather,
// together as large as the rank's parameters; all freed when it returns. Zero without ZeRO-1/2 or
// data parallelism.
struct ParamGatherCopy {
  int64_t input = 0;
  int64_t outputs = 0;
  int64_t members = 1;
};
ParamGatherCopy param_gather_copy(const Layout& l, const ModelStateBytes& state,
                                  const ExecutionOptions& x);
// The bucket buffer ZeRO-1/2's optimizer makes to reduce the gradients after the last backward
// under pipeline parallelism, freed when the reduction ends, before the step (core/framework.h:
// reduce_bucket_elements; DeepSpeed's reduce_gradients(pipeline_parallel=True)), in bytes; 0
// without one, without pipeline parallelism, or where the gradients are accumulated in fp32
// (DeepSpeed's BF16_Optimizer, which does not use it).
int64_t pipeline_reduce_bucket_bytes(const Training& t, const Layout& l, const ExecutionOptions& x);
// What the step's transients hold beyond the model state at their most, one after the other: the
// reduction's bucket (pipeline_reduce_bucket_bytes), the optimizer's copies of the gradients
// (StepGradCopy; negative where ZeRO-1 frees more gradients, those outside the partition, than its
// copies take), then, once they are freed, the parameter all-gather's (ParamGatherCopy).
int64_t step_grad_copy_extra_bytes(const Training& t, const Layout& l, const ModelStateBytes& state,
                                   const ExecutionOptions& x);

RankMemory rank_memory(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                       const Device& d, const ExecutionOptions& x);

// Every pipeline stage's layers and model state, which the shape (dp, tp, pp, cp, ep), the virtual
// stages with their split of the layers and the ZeRO stage decide alone (not the micro-batches,
// recomputation, sp or schedule).
struct StageState {
  StageLayers layers;
  ModelStateBytes state;
};
std::vector<StageState> stage_states(const Model& m, const Training& t, const Layout& l);

// What one micro-batch's activations take on a rank, the same on every stage: sized once per
// layout from its rank shape, recomputation and whether its schedule splits the backward.
struct ActivationSizes {
  int64_t dense = 0, moe = 0;                    // a layer's, under the layout's recomputation
  int64_t dense_whole = 0, moe_whole = 0;        // a layer's without recomputation
  int64_t dense_backward = 0, moe_backward = 0;  // the gradients a layer's backward holds
  int64_t dense_weight_grad = 0, moe_weight_grad = 0;  // held from B to W (split backward)
  int64_t input = 0;                                   // the embedding's output (first stage)
  int64_t output = 0;                                  // the head's input (last stage)
  LossMemory loss;                                     // the last stage's
};
ActivationSizes activation_sizes(const Model& m, const Training& t, const Layout& l,
                                 const ExecutionOptions& x);

// What worst_stage_memory carries from one layout to the next: stage_states and each stage's
// runtime_memory, sized once for all the layouts the planner's inner loops run over one shape, and
// the activation sizes of the micro-batch shapes and recomputations met in it. A cache serves one
// model, training, cluster and execution options; the planner keeps one per thread.
class StageStateCache {
 public:
  const std::vector<StageState>& stages(const Model& m, const Training& t, const Layout& l);
  const RuntimeMemory& runtime(const Cluster& c, const Layout& l, int stage);
  // The least runtime_memory of any stage of the shape.
  int64_t least_runtime_bytes(const Cluster& c, const Layout& l);
  const ActivationSizes& activations(const Model& m, const Training& t, const Layout& l,
                                     const ExecutionOptions& x);

 private:
  // Forgets what another shape sized: the enumeration runs one shape at a time.
  void select_shape(const Layout& l);

  struct Entry {
    int vpp = 1, zero = 0;
    bool v_placed = false;   // v_placement: which rank holds which virtual stage
    std::vector<int> split;  // Layout::stages: the layers of each virtual stage
    std::vector<StageState> stages;
  };
  std::array<int, 5> shape_{};  // dp, tp, pp, cp, ep
  std::string rank_order_;      // with the shape, where the groups' ranks sit
  std::vector<Entry> entries_;  // of that shape
  std::vector<std::optional<RuntimeMemory>> runtime_;  // by stage
  std::optional<int64_t> least_runtime_;
  struct Activations {
    std::array<int, 4> key{};  // micro_batch, sequence_parallel, recompute, split backward
    ActivationSizes sizes;
  };
  std::vector<Activations> activations_;  // of that shape
};

// Every stage's memory, first to last, their layers and model state from `cache` when given.
std::vector<RankMemory> stage_memories(const Model& m, const Training& t, const Layout& l,
                                       const Device& d, const ExecutionOptions& x,
                                       StageStateCache* cache = nullptr);

// The pipeline stage whose ranks need the most memory. Every stage has the same capacity and
// reserve, so that stage decides whether the layout fits (the planner prunes with it before
// timing; estimate() picks its worst stage the same way).
// With `stop_above`, the stages are sized first to last only until one's peak is above it: then
// `complete` is false and `memory` is that stage's, whose peak is a lower bound of the worst's.
struct WorstStageMemory {
  int stage = 0;
  RankMemory memory;
  bool complete = true;
};
WorstStageMemory worst_stage_memory(const Model& m, const Training& t, const Layout& l,
                                    const Device& d, const ExecutionOptions& x,
                                    StageStateCache* cache = nullptr,
                                    std::optional<int64_t> stop_above = std::nullopt);

struct MemoryItem {
  std::string_view name;
  int64_t bytes = 0;
};

// Every item, in the order a training process allocates them (the reserve first).
std::array<MemoryItem, 21> memory_items(const RankMemory& r);

// Sets a stage's runtime memory to runtime_memory's: its NCCL communicators and cuBLAS
// workspaces beside the context. Of one stage, or of every stage (stages[i] is stage i).
void add_runtime_memory(RankMemory& stage, const Cluster& c, const Layout& l,
                        StageStateCache* cache = nullptr);
void add_runtime_memory(std::vector<RankMemory>& stages, const Cluster& c, const Layout& l,
                        StageStateCache* cache = nullptr);

// The first item that does not fit into what the items before it left free.
struct MemoryOverflow {
  std::string_view item;
  int64_t needed_bytes = 0;
  int64_t free_bytes = 0;
};
std::optional<MemoryOverflow> first_overflow(const RankMemory& r);

}  // namespace shardplan
