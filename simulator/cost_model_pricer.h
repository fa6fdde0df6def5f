// The analytical cost model as the step simulator's ActionPricer: every action of a schedule priced
// with the formulas estimate() uses — compute per layer part and pass (compute_model.h),
// collectives, gradient reductions, parameter gathers and pipeline transfers on the interconnect
// level their members span (collective_cost.h), the optimizer step by the bytes it moves — and each
// micro-batch chunk's activations by activation_memory.h.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/placement.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/collective_cost.h"
#include "simulator/device_efficiency.h"
#include "simulator/event_simulator.h"
#include "simulator/execution_options.h"

namespace shardplan {

class CostModelPricer : public ActionPricer {
 public:
  // Prices the programs of `step`, which must be built from the same model, training and layout;
  // the device must compute in the training dtype (estimate() checks it).
  CostModelPricer(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x, const StepPrograms& step);

  // compute: the parts' time in its pass, from the per-part figures of one layer of its kind (or
  // the embedding or head). A backward adds the re-forward of selective recomputation (the
  // attention core's s×s tensors, Korthikanti et al. 2022 §5); full recomputation's own actions
  // (pass recompute) are priced as that re-forward. collective, grad_reduce, param_gather
  // (the vocabulary-parallel cross-entropy's all-reduces among them): collective_cost
  // of op and bytes on the members' span (the cold-input fit where reads_cold_input), and a ZeRO
  // reduce_scatter's grad_reduce_local_bytes at the memory rate. send: one transfer on the level
  // joining the two ranks. recv: 0 (its end is its send's). optimizer_step: the bytes
  // optimizer_step_bytes moves for its params at the memory rate.
  double duration_s(const Program& p, const Action& a) const override;

  // Layer activations of the chunk's layers for one micro-batch, plus the embedding's (first
  // virtual stage) and the final norm's and head's inputs (last virtual stage): the per-micro-batch
  // terms of rank_memory's activations, recompute's working layer aside.
  int64_t activation_bytes(const Program& p, int chunk) const override;

 private:
  static constexpr size_t kPartSets = size_t{1} << kPartNames.size();
  static constexpr size_t kGroupCodes = kGroupNames.size() + 1;    // + the tied-embedding pair
  using PassTable = std::array<std::array<double, kPartSets>, 3>;  // forward, backward, recompute

  // Where one program's groups and pipeline peers sit.
  struct RankSpans {
    std::array<GroupSpan, kGroupCodes> groups{};
    std::vector<GroupSpan> pp_peers;  // the pair (rank, stage s's rank), by s
  };

  const RankSpans& spans(const Program& p) const;
  const GroupSpan& group_span_of(const Program& p, const Action& a) const;

  Cluster cluster_;
  Training training_;
  Layout layout_;
  DeviceRates rates_;
  CollectiveOptions collective_options_;          // carries the calibrated profile, if any
  PassTable compute_s_{};                         // a compute action's time by pass and part set
  std::vector<int64_t> chunk_activation_bytes_;   // by virtual stage
  std::unordered_map<int64_t, RankSpans> spans_;  // by rank
};

}  // namespace shardplan
