// What one action of a program costs on the cost model, the single pricing rule behind both the
// event simulator's CostModelPricer (every action of every rank) and the planner's estimate (each
// distinct action of a folded program, core/schedule_fold.h): a compute action is its parts'
// figures in its pass; a collective, gradient reduction or parameter gather is collective_cost of
// its op and bytes on the span its members cover, plus a ZeRO reduce-scatter's own memory traffic;
// a send is one transfer between the two ranks; the optimizer step moves its parameters' bytes.
#pragma once

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/placement.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/collective_cost.h"
#include "simulator/device_efficiency.h"
#include "simulator/execution_options.h"
#include "simulator/parts_compute.h"

namespace shardplan {

// Every part's compute for one micro-batch: a dense layer's attention, norms and MLP, an MoE
// layer's router and experts, the ends' embedding, final norm and head.
PartsCompute model_parts_compute(const Model& m, const Training& t, const Layout& l,
                                 const DeviceRates& r, const ExecutionOptions& x);

// The compute a compute action runs, by pass and kind of operation: its parts' forward, backward
// (with their weight gradients unless flagged kInputGradOnly), weight gradients (a split
// backward's W) or re-forward (full recomputation's actions, pass recompute); a backward also
// carries selective recomputation's re-forward, which has no action of its own (Korthikanti et
// al. 2022 §5).
MicrobatchCompute compute_action_cost(const PartsCompute& parts, const Action& a, Recompute r);
double compute_action_s(const PartsCompute& parts, const Action& a, Recompute r);

// A collective, grad_reduce or param_gather on `span`: collective_cost of its op and bytes (the
// cold-input fit where reads_cold_input), and a ZeRO reduce_scatter's grad_reduce_local_bytes at
// the memory rate, reported apart.
struct GroupActionCost {
  CollectiveCost collective;
  double local_s = 0;
  double time_s() const { return collective.time_s + local_s; }
};
GroupActionCost group_action_cost(const Cluster& c, const DeviceRates& r,
                                  const CollectiveOptions& o, const Action& a,
                                  const GroupSpan& span, int zero);

// A send between the two ranks `pair` spans.
CollectiveCost send_cost(const Cluster& c, const CollectiveOptions& o, const Action& a,
                         const GroupSpan& pair);

}  // namespace shardplan
