// The analytical cost model as the step simulator's ActionPricer: every action of a schedule priced
// by the rule estimate() prices the folded program with (simulator/action_cost.h), on the
// interconnect level its members span, and each micro-batch chunk's activations by
// activation_memory.h.
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
#include "simulator/parts_compute.h"

namespace shardplan {

class CostModelPricer : public ActionPricer {
 public:
  // Prices the programs of `step`, which must be built from the same model, training and layout;
  // the device must compute in the training dtype (estimate() checks it).
  CostModelPricer(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x, const StepPrograms& step);

  // Each action by simulator/action_cost.h's rule (the vocabulary-parallel cross-entropy's
  // all-reduces are collectives like any other). recv: 0 (its end is its send's).
  double duration_s(const Program& p, const Action& a) const override;

  // A group action on a communication stream: its NCCL channels ÷ the device's SMs
  // (interference.h).
  double interference_share(const Program& p, const Action& a) const override;

  // Layer activations of the chunk's layers for one micro-batch, plus the embedding's (first
  // virtual stage) and the final norm's and head's inputs (last virtual stage): the per-micro-batch
  // terms of rank_memory's activations, recompute's working layer aside.
  int64_t activation_bytes(const Program& p, int chunk) const override;
  int64_t weight_grad_bytes(const Program& p, int chunk) const override;

 private:
  static constexpr size_t kGroupCodes = kGroupNames.size() + 1;  // + the tied-embedding pair

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
  PartsCompute parts_;                            // every part's compute (simulator/action_cost.h)
  std::vector<int64_t> chunk_activation_bytes_;   // by virtual stage
  std::vector<int64_t> chunk_weight_grad_bytes_;  // by virtual stage (split backward)
  std::unordered_map<int64_t, RankSpans> spans_;  // by rank
};

}  // namespace shardplan
