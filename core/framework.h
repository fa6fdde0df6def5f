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
// flash2, flash3: FlashAttention-2 (Dao 2023) and FlashAttention-3 (Shah et al. 2024, Hopper
// only; cuDNN's fused attention in TransformerEngine reaches the same class of rates).
enum class AttentionKernel { unfused, flash2, flash3 };
inline constexpr EnumNames<AttentionKernel, 3> kAttentionKernelNames{
    {{AttentionKernel::unfused, "unfused"},
     {AttentionKernel::flash2, "flash2"},
     {AttentionKernel::flash3, "flash3"}}};

// The loss over the vocabulary, by whose kernels (counted in simulator/compute_model.cpp):
// fused: one kernel each way over the logits (Megatron-Core's cross_entropy_loss_fusion,
//   TransformerEngine's); megatron: Megatron-LM's vocab_parallel_cross_entropy on the logits cast
//   to fp32, a pass per step (max, subtract, exp, sum, divide); pytorch: F.cross_entropy on the
//   logits cast to fp32 (log_softmax and nll_loss); shardplan: the executor's own
//   (executor/layers/cross_entropy.cpp).
enum class CrossEntropyKernel { fused, megatron, pytorch, shardplan };
inline constexpr EnumNames<CrossEntropyKernel, 4> kCrossEntropyKernelNames{
    {{CrossEntropyKernel::fused, "fused"},
     {CrossEntropyKernel::megatron, "megatron"},
     {CrossEntropyKernel::pytorch, "pytorch"},
     {CrossEntropyKernel::shardplan, "shardplan"}}};

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

  bool operator==(const Framework&) const = default;
};

// The training as `f` runs it: its data-parallel reduction overlapped or not.
Training run_by(Training t, const Framework& f);

// Every field is required, and `source` must give the source of each.
Framework framework_from_json(const nlohmann::json& j, const std::string& file);

// A preset name (frameworks/NAME.json in the data folder) or a path to a framework JSON.
Framework load_framework(const std::string& name_or_path);

// The framework priced when none is named: Megatron-Core with TransformerEngine.
inline constexpr const char* kDefaultFramework = "megatron-core";

}  // namespace shardplan
