// How the planner's estimate reads a program's communication: which computation can hide each
// action (its window), how often it runs, and the bytes one rank sends for it.
#pragma once

#include <cstdint>

#include "core/enum_names.h"
#include "core/layout.h"
#include "core/schedule.h"

namespace shardplan {

// The computation a communication action can run under, as the program's dependencies place it:
//   none      : on the critical path. A layer's tp, cp and ep collectives sit between its compute
//               actions, each waiting for the one before (core/schedule_layer.cpp); the norm and
//               tied-embedding reductions run after the last backward (finalize_model_grads).
//   forward   : parameter all-gathers prefetched ahead of the layer that needs them (FSDP
//               forward prefetch; Megatron-Core --overlap-param-gather under the first forward).
//   backward  : gradient reductions launched as buckets become ready during backward (Li et al.
//               2020, PyTorch DDP §3.2.3; Megatron-Core --overlap-grad-reduce), ZeRO-3 backward
//               prefetch.
//   pipeline  : point-to-point between stages (see estimate.cpp for when it is exposed).
enum class CommWindow { none, forward, backward, pipeline };
inline constexpr EnumNames<CommWindow, 4> kCommWindowNames{{{CommWindow::none, "none"},
                                                            {CommWindow::forward, "forward"},
                                                            {CommWindow::backward, "backward"},
                                                            {CommWindow::pipeline, "pipeline"}}};

// A send, recv, collective, grad_reduce or param_gather's window.
CommWindow comm_window(const Action& a);

enum class CommFrequency { per_microbatch, per_step };
inline constexpr EnumNames<CommFrequency, 2> kCommFrequencyNames{
    {{CommFrequency::per_microbatch, "per_microbatch"}, {CommFrequency::per_step, "per_step"}}};

// Bytes one rank sends per step for an action of `bytes` (nccl-tests' "size") issued
// `calls_per_step` times in a group of n: size × nccl-tests' bus-bandwidth factor (all-reduce
// 2(n−1)/n, reduce-scatter and all-gather (n−1)/n, send/recv 1), the closed forms of the ZeRO
// paper §7 (DP all-reduce 2Ψ, ZeRO-3 3Ψ).
double volume_bytes(Collective op, int64_t bytes, int n, int64_t calls_per_step);

// Data-parallel replicas of the dense and the expert parameters: dp·cp and dp/ep·cp (weights are
// replicated over the context-parallel ranks too, Megatron-Core reduces over dp × cp).
int64_t dense_replicas(const Layout& l);
int64_t expert_replicas(const Layout& l);

}  // namespace shardplan
