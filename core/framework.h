// How a training framework runs the layers of a model: the attention kernel, the fused kernels,
// dropout, and how fast its host issues kernels. Described per framework in frameworks/*.json,
// each field with its source, as topologies/ describe clusters; the cost model prices a layer as
// the named framework runs it (simulator/execution_options.h: execution_options).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/enum_names.h"
#include "core/training.h"

namespace shardplan {

// unfused: QKᵀ and the product with V as batched GEMMs around a fused scale/mask/softmax kernel,
// the s×s scores materialised (Megatron-LM before 2022, Korthikanti et al. 2022 eq. 1).
// flash1: FlashAttention (Dao et al. 2022) and the Triton kernels derived from it (Tri Dao's
// flash_attn_triton.py, which MPT ships as attn_impl 'triton'), tiled like FlashAttention-2 but
// without its work partitioning, so at about half its rate (Dao 2023, §1 and §4.1).
// flash2, flash3: FlashAttention-2 (Dao 2023) and FlashAttention-3 (Shah et al. 2024, Hopper
// only; cuDNN's fused attention in TransformerEngine reaches the same class of rates).
enum class AttentionKernel { unfused, flash1, flash2, flash3 };
inline constexpr EnumNames<AttentionKernel, 4> kAttentionKernelNames{
    {{AttentionKernel::unfused, "unfused"},
     {AttentionKernel::flash1, "flash1"},
     {AttentionKernel::flash2, "flash2"},
     {AttentionKernel::flash3, "flash3"}}};

// The loss over the vocabulary, by whose kernels (counted in simulator/compute_model.cpp):
// fused: one kernel each way over the logits (Megatron-Core's cross_entropy_loss_fusion,
//   TransformerEngine's); megatron: Megatron-LM's vocab_parallel_cross_entropy on the logits cast
//   to fp32, a pass per step (max, subtract, exp, sum, divide); pytorch: F.cross_entropy on the
//   logits cast to fp32 (log_softmax and nll_loss); nanotron: Megatron's passes with the max
//   subtracted out of place, so a second fp32 copy of the logits exists while the loss runs
//   (nanotron's _ShardedCrossEntropy); flash_attn: flash-attn's CrossEntropyLoss (Apex's
//   xentropy), one kernel each way on the compute-dtype logits, which it keeps for its backward
//   instead of an fp32 softmax; shardplan: the executor's own (executor/layers/cross_entropy.cpp).
enum class CrossEntropyKernel { fused, megatron, pytorch, nanotron, flash_attn, shardplan };
inline constexpr EnumNames<CrossEntropyKernel, 6> kCrossEntropyKernelNames{
    {{CrossEntropyKernel::fused, "fused"},
     {CrossEntropyKernel::megatron, "megatron"},
     {CrossEntropyKernel::pytorch, "pytorch"},
     {CrossEntropyKernel::nanotron, "nanotron"},
     {CrossEntropyKernel::flash_attn, "flash_attn"},
     {CrossEntropyKernel::shardplan, "shardplan"}}};

// How each micro-batch's weight gradients join the ones accumulated over the step.
// in_place: every gradient kernel adds into the accumulated gradient itself, the weight-gradient
//   GEMMs (C += Xᵀ·dY) and the embedding's scatter-add alike (shardplan's executor).
// fused: the linear layers' weight-gradient GEMMs add into it (Megatron-Core's
//   gradient_accumulation_fusion, TransformerEngine's fuse_wgrad_accumulation); the other
//   parameters' gradients (the embedding's) are added by a hook, as below.
// hook: a hook or a pass after the backward adds every micro-batch's compute-dtype gradient into
//   the accumulation buffer of the gradient dtype (Megatron-LM 2021's main_grad hook, nanotron's
//   FP32GradientAccumulator): it reads both and writes the buffer.
// autograd: PyTorch's AccumulateGrad: the first micro-batch's gradient becomes .grad, each later
//   one is added into it in place (DeepSpeed's engine, FSDP's saved gradient shard); gradients
//   accumulated in fp32 beside compute-dtype ones are added after every backward, as a hook
//   (DeepSpeed's BF16_Optimizer update_hp_grads).
enum class GradAccumulation { in_place, fused, hook, autograd };
inline constexpr EnumNames<GradAccumulation, 4> kGradAccumulationNames{
    {{GradAccumulation::in_place, "in_place"},
     {GradAccumulation::fused, "fused"},
     {GradAccumulation::hook, "hook"},
     {GradAccumulation::autograd, "autograd"}}};

struct Framework {
  std::string name;
  AttentionKernel attention = AttentionKernel::flash3;
  // Dropout after attention and MLP (GPT-2/3 and BLOOM recipes, Megatron's default 0.1).
  bool dropout = false;
  // Biases added inside the GEMM epilogues and fused bias-GeLU / bias-dropout-add kernels, costing
  // no pass of their own; false: each bias is a pass over the output, each bias gradient a sum.
  bool fused_bias = true;
  // Host time to issue one kernel (eager PyTorch: Python module, dispatcher, launch). A stream
  // cannot run kernels faster than its host issues them; 0 for a framework that replays CUDA
  // graphs.
  double host_us_per_kernel = 0;
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::fused;
  // Whether the data-parallel reduction of accumulated gradients (ZeRO 0 and 1) overlaps the
  // last micro-batch's backward, bucket by bucket (PyTorch DDP, Megatron-Core's
  // overlap_grad_reduce), or runs after the whole backward (Megatron-LM of 2021, DeepSpeed's
  // overlap_comm off). ZeRO-2 and -3 reduce within every backward and always overlap it.
  bool overlap_grad_reduce = true;
  // Whether ZeRO-1/2's gather of the updated parameters overlaps the next forward, bucket by
  // bucket (Megatron-Core's overlap_param_gather), or runs whole when the optimizer step ends
  // (DeepSpeed's ZeRO-1/2, nanotron's ZeRO-1): then the step waits for it.
  bool overlap_param_gather = true;
  // The sequence-parallel all-gathers and reduce-scatters cut into chunks that pass while the
  // GEMMs beside them run (TransformerEngine's userbuffers; Megatron-Core's --tp-comm-overlap),
  // instead of each collective running whole between the GEMMs (simulator/tp_comm_overlap.h).
  bool tp_comm_overlap = false;
  // Transformer Engine's FP8 weight copies kept from a step's first micro-batch to its last
  // (Megatron-Core passes is_first_microbatch); false: each micro-batch casts the weights again.
  // Under ZeRO-3 the weights are cast as they are gathered, whatever this says.
  bool fp8_weight_cache = false;
  // SwiGLU as one kernel that recomputes silu(gate) in its backward (Megatron-Core's
  // bias_swiglu_fusion): the MLP keeps its gate and up outputs and their product. false: eager
  // `silu(gate) * up`, two kernels each way, which also keeps silu's output for the product's
  // backward (4 ffn-wide tensors per token instead of 3).
  bool fused_swiglu = true;
  // The data-parallel wrapper of ZeRO-0 keeps its gradient buckets apart from the gradients
  // (PyTorch DDP with gradient_as_bucket_view off): one more copy of a rank's gradients, in the
  // compute dtype, under ZeRO-0 with dp > 1.
  bool grad_bucket_copy = false;
  // Buffers of a whole micro-batch's hidden states (tokens × hidden, compute dtype) the framework
  // keeps between calls for the sequence-parallel all-gathers (tp > 1 with sp).
  int sp_gather_buffers = 0;
  // PyTorch's CUDA caching allocator holds the tensors, so a rank reserves more than it allocates
  // (simulator/allocator_replay.h); false: the framework allocates each buffer itself.
  bool caching_allocator = true;
  // The caching allocator maps one growing range per pool instead of a segment per size
  // (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; simulator/caching_allocator.h). Only with
  // caching_allocator.
  bool expandable_segments = false;
  // Under multi-head attention (as many K/V heads as Q heads) the attention keeps Q as a view of
  // the one permuted Q, K, V buffer, whose K and V it copies out for the kernel: K and V are held
  // twice (nanotron's CausalSelfAttention). false: the kernel's inputs are all that is held.
  bool mha_kv_copied = false;
  // Autograd's gradients in the compute dtype are held for every parameter until the whole
  // backward returns, beside the fp32 buffer they are then added into (nanotron's
  // FP32GradientAccumulator.backward). false: they go into the buffer as the backward makes them
  // (Megatron's main_grad, written by the weight-gradient GEMM), or are the buffer.
  bool param_grads_held = false;
  // With param_grads_held: the compute-dtype gradients stay after they are added into the fp32
  // buffer, until the next backward frees them as it starts, so they are held through every
  // forward, the next step's too (DeepSpeed's BF16_Optimizer, ZeRO-0/1: its backward calls
  // clear_lp_grads before and update_hp_grads(clear_lp_grads=False) after, and its step does not
  // free them). false: freed once added (nanotron).
  bool param_grads_kept = false;
  // The optimizer step makes the fp32 gradients its master weights read as a new tensor, and frees
  // it when the step ends (DeepSpeed: FP16_Optimizer under ZeRO-0, each gradient cast to fp32 and
  // the casts concatenated; the ZeRO-1/2 optimizer, the partition's gradients concatenated and the
  // flat copy cast). Only where the gradients are kept in the compute dtype. false: the master
  // weights read a buffer that lives throughout (Megatron's main_grad) or the gradients themselves.
  bool step_grad_copy = false;
  // ZeRO-1/2's parameter all-gather after the optimizer step flattens into new tensors: the rank's
  // updated shard and one output per data-parallel rank, together as large as the parameters,
  // freed when it returns (nanotron's all_gather_coalesced). false: it gathers into the
  // parameters' own buffer in place.
  bool param_gather_copy = false;
  // Elements of the bucket buffer ZeRO-1/2's optimizer makes, in the compute dtype, to reduce the
  // gradients after the last backward under pipeline parallelism, freed before the step
  // (DeepSpeed's reduce_gradients(pipeline_parallel=True): its reduce_bucket_size). 0: none.
  int64_t reduce_bucket_elements = 0;
  // Gradient elements at which the data-parallel wrapper closes a reduction bucket (PyTorch DDP's
  // bucket_cap_mb, DeepSpeed's allreduce_bucket_size); 0: Megatron-LM's size, which grows with dp
  // (core/schedule.h: grad_bucket_params).
  int64_t grad_bucket_elements = 0;
  // ZeRO-1 with fp32 gradients drops the bucketed reduction: one all-reduce of the whole gradient
  // buffer once the backward is done, each rank keeping all of it though it steps its shard
  // (nanotron: no DDP wrapper under ZeRO-1 with fp32 accumulation, sync_gradients_across_dp with
  // reduce_scatter=False). false: ZeRO-1 reduce-scatters its buckets as ZeRO-0 all-reduces them.
  bool zero1_whole_all_reduce = false;
  // How the weight gradients accumulate over the micro-batches of a step (GradAccumulation).
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  // Who splits the decoder layers over the pipeline stages (core/training.h: LayerSplit).
  LayerSplit layer_split = LayerSplit::layout;

  bool operator==(const Framework&) const = default;
};

// The training as `f` runs it: its data-parallel reduction overlapped or not, its layers split
// over the pipeline stages by the layout or by the framework.
Training run_by(Training t, const Framework& f);

// Every field is required, and `source` must give the source of each.
Framework framework_from_json(const nlohmann::json& j, const std::string& file);

// A preset name (frameworks/NAME.json in the data folder) or a path to a framework JSON.
Framework load_framework(const std::string& name_or_path);

// The framework priced when none is named: Megatron-Core with TransformerEngine.
inline constexpr const char* kDefaultFramework = "megatron-core";

}  // namespace shardplan
