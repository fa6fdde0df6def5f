// Compute of one micro-batch on one pipeline stage of one rank: every matmul and attention product
// of the stage (forward; backward = dgrad + wgrad = 2× forward, Narayanan et al. 2021 §5.1;
// the re-forward that recomputation adds), the memory-bound kernels between them (norms,
// activations, softmax, dropout, residual adds, RoPE, embedding, cross entropy) timed by the bytes
// they move, and the optimizer step.
#pragma once

#include <array>
#include <cstdint>

#include "core/enum_names.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/param_shard.h"
#include "core/training.h"
#include "simulator/device_efficiency.h"
#include "simulator/execution_options.h"

namespace shardplan {

enum class OpKind { matmul, attention, memory_bound };
inline constexpr EnumNames<OpKind, 3> kOpKindNames{{{OpKind::matmul, "matmul"},
                                                    {OpKind::attention, "attention"},
                                                    {OpKind::memory_bound, "memory_bound"}}};

struct KindCost {
  double flops = 0;    // executed FLOPs (causal flash attention skips the masked half)
  double bytes = 0;    // bytes moved by memory-bound kernels
  double time_s = 0;   // on the device
  double kernels = 0;  // launched
};

// One pass over the stage for one micro-batch, by kind of operation.
struct PassCost {
  std::array<KindCost, 3> kinds{};
  // The host's time to issue the pass's kernels (ExecutionOptions::host_s_per_kernel each) and,
  // once settle_host_bound has run over the passes of an action, how long the device waits for it.
  double issue_s = 0;
  double host_wait_s = 0;

  KindCost& operator[](OpKind k) { return kinds[static_cast<size_t>(k)]; }
  const KindCost& operator[](OpKind k) const { return kinds[static_cast<size_t>(k)]; }
  double flops() const;
  double kernels() const;
  double device_s() const;
  double time_s() const { return device_s() + host_wait_s; }
};

// The kernels of one action run back to back on one stream, and the host issues them
// asynchronously: it runs ahead while long kernels run and the device drains its queue, so the
// action takes the longer of the device's time and the host's (Σ max per kernel would forbid the
// host from running ahead; a queue never outlives the action, since the next one waits for a
// collective or a message). Sets host_wait_s to what the device waits beyond its own time.
void settle_host_bound(PassCost& p);

// dst += times × src, kind by kind.
void add_pass(PassCost& dst, const PassCost& src, double times);

// weight_grad: the weight-gradient GEMMs, dW = Xᵀ·dY. In a part's figures (parts_compute.h) they
// are apart from its backward; a compute action's cost (action_cost.h) counts them in its backward
// unless the schedule splits the backward, where they are the W actions' own.
struct MicrobatchCompute {
  PassCost forward, backward, weight_grad;
  PassCost recompute;  // the re-forward done inside the backward
  double time_s() const {
    return forward.time_s() + backward.time_s() + weight_grad.time_s() + recompute.time_s();
  }
};

// dst += times × src, pass by pass.
void add_compute(MicrobatchCompute& dst, const MicrobatchCompute& src, double times);

// What of the layout beyond its rank shape the weight gradients' accumulation over a step reads
// (compute_model.cpp: GradAdd), all 0 where it reads none, for the caches keyed without it.
// Under PyTorch's AccumulateGrad: `shard_ranks`, the ranks a ZeRO-2/3 shard is cut over (dp·cp,
// the rank adding only its shard; 0 below ZeRO-2), and `microbatches`, the step's, where the first
// one's gradient is assigned, not added (0 where it is added into a buffer of another dtype).
struct GradAccumulationReads {
  int shard_ranks = 0;
  int microbatches = 0;
};
GradAccumulationReads grad_accumulation_reads(GradAccumulation mode, const Training& t,
                                              const Layout& l);

// The step's micro-batches, where a micro-batch's compute depends on them (0 where it does not),
// for the caches keyed without them: AccumulateGrad assigns the first one's gradient
// (grad_accumulation_reads), cached FP8 weights are quantized once a step (fp8_weights_cached).
int parts_microbatches(const Training& t, const Layout& l, const ExecutionOptions& x);

MicrobatchCompute microbatch_compute(const Model& m, const Training& t, const Layout& l,
                                     const StageLayers& s, const DeviceRates& r,
                                     const ExecutionOptions& x);

// Bytes the optimizer step moves for `elements` parameters: the global gradient norm for clipping
// reads every gradient once; Adam reads and writes the fp32 master weight and both moments, reads
// the gradient and writes the compute-dtype weight (the tensors of apex/Megatron FusedAdam and
// Megatron-LM's clip_grad_norm). SGD (torch.optim.SGD, momentum 0) keeps no moments.
double optimizer_step_bytes(const Training& t, int64_t elements);

// The optimizer step over `elements` parameters: those bytes at the memory rate, or at the
// profile's measured optimizer_step rate.
double optimizer_step_time_s(const DeviceRates& r, const Training& t, int64_t elements);

}  // namespace shardplan
