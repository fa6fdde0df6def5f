// The collectives one training step issues on a rank of a pipeline stage: their group, the size of
// each call (nccl-tests' "size"), how often they run, and which computation can hide them.
// Priced by collective_cost() in estimate.cpp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/param_shard.h"
#include "core/placement.h"
#include "core/training.h"
#include "simulator/collective_cost.h"

namespace shardplan {

// The computation a collective can run under:
//   none      : on the critical path (tensor-parallel and expert all-to-all: the next matmul waits
//               for the result; Megatron-LM runs them on the compute stream).
//   attention : the context-parallel ring exchanges the next K/V block while the current block's
//               attention runs (Liu et al. 2023, Ring Attention §3; Megatron-Core/TE CP).
//   forward   : parameter all-gathers prefetched ahead of the layer that needs them (FSDP
//               forward prefetch; Megatron-Core --overlap-param-gather under the first forward).
//   backward  : gradient reductions launched as buckets become ready during backward (Li et al.
//               2020, PyTorch DDP §3.2.3; Megatron-Core --overlap-grad-reduce), ZeRO-3 backward
//               prefetch, and sequence parallelism's re-gather of a layer input for the weight
//               gradient, issued before the input-gradient GEMM (Megatron-LM
//               LinearWithGradAccumulationAndAsyncCommunication).
//   pipeline  : point-to-point between stages (see estimate.cpp for when it is exposed).
enum class CommWindow { none, attention, forward, backward, pipeline };
inline constexpr EnumNames<CommWindow, 5> kCommWindowNames{{{CommWindow::none, "none"},
                                                            {CommWindow::attention, "attention"},
                                                            {CommWindow::forward, "forward"},
                                                            {CommWindow::backward, "backward"},
                                                            {CommWindow::pipeline, "pipeline"}}};

enum class CommFrequency { per_microbatch, per_step };
inline constexpr EnumNames<CommFrequency, 2> kCommFrequencyNames{
    {{CommFrequency::per_microbatch, "per_microbatch"}, {CommFrequency::per_step, "per_step"}}};

struct CollectiveCall {
  std::string_view name;  // "tp_all_reduce", "dp_grad_all_reduce", ...
  Collective collective = Collective::all_reduce;
  Group group = Group::tp;
  int group_size = 0;  // 0: the whole group; otherwise the members taking part
  int64_t bytes = 0;   // nccl-tests "size" of one call
  int64_t calls = 0;   // per micro-batch or per step
  CommFrequency frequency = CommFrequency::per_microbatch;
  CommWindow window = CommWindow::none;
  // Its input was last written long before the call (core/schedule.h's reads_cold_input): a
  // parameter gather, or a gradient bucket of several layers.
  bool cold_input = false;
  // A ZeRO gradient reduce-scatter's parameters per call, whose own memory traffic beside the
  // collective is zero_reduce_scatter_local_bytes (core/schedule.h); 0 for every other call.
  int64_t zero_grad_params = 0;
};

// Fills `out` (cleared first, its capacity reused) with every collective of stage `s`.
void stage_collectives(const Model& m, const Training& t, const Layout& l, const StageLayers& s,
                       std::vector<CollectiveCall>& out);

// Bytes one rank sends per step for a call issued `calls_per_step` times in a group of n:
// size × nccl-tests' bus-bandwidth factor (all-reduce 2(n−1)/n, reduce-scatter and all-gather
// (n−1)/n, send/recv 1), the closed forms of the ZeRO paper §7 (DP all-reduce 2Ψ, ZeRO-3 3Ψ).
double volume_bytes(const CollectiveCall& c, int n, int64_t calls_per_step);

// Gradient bucket of Megatron-Core's DistributedDataParallel: max(40M, 1M·dp) parameters
// (DistributedDataParallelConfig.bucket_size default, distributed_data_parallel.py).
int64_t dp_bucket_elements(int64_t dp);

// Data-parallel replicas of the dense and the expert parameters: dp·cp and dp/ep·cp (weights are
// replicated over the context-parallel ranks too, Megatron-Core reduces over dp × cp).
int64_t dense_replicas(const Layout& l);
int64_t expert_replicas(const Layout& l);

}  // namespace shardplan
