// How the training framework runs the layers, which neither the model, the training nor the
// layout description says, and what was measured on the machine that runs them. Defaults follow
// today's Megatron-Core / TransformerEngine stacks, priced from the datasheets; a framework
// profile (core/framework.h) sets them as that framework runs.
#pragma once

#include <string>

#include "core/framework.h"

namespace shardplan {

struct Profile;

enum class StreamExecution { concurrent, program_order };

struct ExecutionOptions {
  // The attention kernel. A flash kernel never materialises the s×s scores (Dao et al. 2022,
  // 2023): no 5as²b term of Korthikanti et al. 2022 eq. 1, and the masked half is skipped under a
  // causal mask. flash3 runs at the FlashAttention-2 rate on a device without FA3 rates (Ampere).
  AttentionKernel attention = AttentionKernel::flash3;
  // Dropout after attention and MLP (GPT-2/3, Megatron-LM 2021). Llama-style pre-training runs
  // without it (attention_dropout = 0 and no hidden dropout in their Hugging Face configs).
  bool dropout = false;
  // Biases added inside the GEMMs and activation kernels (cuBLASLt epilogues, Megatron-LM's
  // bias-GeLU and bias-dropout-add fusions), costing no pass of their own; false: each bias of
  // QKV and fc1 is its own pass over the output, and every bias gradient a column sum.
  bool fused_bias = true;
  // Host time to issue one kernel: a kernel's time is at least this (framework profile).
  double host_s_per_kernel = 0;
  // The loss's kernels over the logits (core/framework.h).
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::fused;
  // FP8 weight copies kept over a step's micro-batches (core/framework.h).
  bool fp8_weight_cache = false;
  // SwiGLU as one kernel each way, or eager silu and product (core/framework.h).
  bool fused_swiglu = true;
  // The framework's own buffers (core/framework.h).
  bool grad_bucket_copy = false;
  int sp_gather_buffers = 0;
  bool mha_kv_copied = false;
  bool param_grads_held = false;
  bool param_grads_kept = false;
  bool step_grad_copy = false;
  bool param_gather_copy = false;
  int64_t reduce_bucket_elements = 0;
  // How the weight gradients accumulate over a step's micro-batches (core/framework.h).
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  bool caching_allocator = true;
  bool expandable_segments = false;
  // The framework profile these options come from (core/framework.h), for the reports.
  std::string framework = kDefaultFramework;
  // How a rank's streams run: concurrently, each an ordered queue (CUDA streams, NCCL on its own
  // stream), or every action in program order on one thread.
  StreamExecution streams = StreamExecution::concurrent;
  // A calibration profile (core/profile.h) to price with instead of the datasheet efficiencies:
  // GEMMs at its measured rates, memory-bound kernels at the rates it measured for them (else at
  // its bandwidth), collectives by its fits
  // where it has one for the group. The cluster is expected to carry apply_profile's overlay of
  // the same profile. Not owned: it must outlive every estimate made with it; null: datasheets.
  const Profile* profile = nullptr;
};

// How shardplan's own CPU executor runs a schedule (executor/interpreter.h): one thread per rank
// runs the actions in program order (a collective blocks it; a pipeline send is posted and
// returns), attention materialises the scores (no flash kernel), no dropout, and biases are passes
// of their own.
inline ExecutionOptions cpu_executor_options() {
  ExecutionOptions x;
  x.framework = "shardplan-cpu";
  x.attention = AttentionKernel::unfused;
  x.dropout = false;
  x.fused_bias = false;
  x.cross_entropy = CrossEntropyKernel::shardplan;
  x.caching_allocator = false;
  x.streams = StreamExecution::program_order;
  x.grad_accumulation = GradAccumulation::in_place;
  return x;
}

// How `f` runs the layers, priced from the datasheets.
ExecutionOptions execution_options(const Framework& f);

bool is_flash(AttentionKernel k);

}  // namespace shardplan
