// One pipeline stage's folded program (core/schedule_fold.h) priced on the cost model, action by
// action: its compute per micro-batch, its communication by the window it may hide under and the
// stream it runs on, and its per-step work; then what each window leaves exposed and the compute
// that hidden communication slows (simulator/interference.h). stage_timing.h times a layout's
// stages with these and shares the priced actions between layouts.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/schedule_fold.h"
#include "simulator/call_costs.h"
#include "simulator/device_efficiency.h"
#include "simulator/estimate.h"
#include "simulator/parts_compute.h"

namespace shardplan {

// What pricing a layout's stages needs, sized once per layout.
struct StageContext {
  const Model& m;
  const Cluster& c;
  const Training& t;
  const Layout& l;
  const ExecutionOptions& x;
  DeviceRates rates;
  // Shared with the cache's entry: a few kilobytes, and a layout's contexts are made by the
  // hundred thousand in a search.
  std::shared_ptr<const PartsCompute> parts;
  CollectiveOptions collective_options;
  CallCosts* calls;  // the cache's, or none
};

// Where each group of one rank sits, computed on first use (group_span walks the group's ranks).
class SpanCache {
 public:
  SpanCache(const StageContext& ctx, int64_t rank) : ctx_(ctx), rank_(rank) {}
  const GroupSpan& operator()(Group g) {
    std::optional<GroupSpan>& s = spans_[static_cast<size_t>(g)];
    if (!s) s = group_span(ctx_.c, ctx_.l, rank_, g);
    return *s;
  }

 private:
  const StageContext& ctx_;
  int64_t rank_;
  std::array<std::optional<GroupSpan>, kGroupNames.size()> spans_{};
};

// One stage's time per micro-batch and per step.
struct StageTiming {
  MicrobatchCompute compute;
  double microbatch_comm_s = 0;  // exposed, per micro-batch
  double step_comm_s = 0;        // exposed, per step
  // Compute slowed by the communication it hides (interference.h), per micro-batch and per step.
  double microbatch_interference_s = 0;
  double step_interference_s = 0;
  double optimizer_s = 0;
  double optimizer_bytes = 0;

  double microbatch_s() const {
    return compute.time_s() + microbatch_comm_s + microbatch_interference_s;
  }
  double step_extra_s() const { return step_comm_s + step_interference_s + optimizer_s; }
};

// Communication time that one kind of window leaves on the critical path.
struct WindowLoad {
  double total_s = 0;
  double longest_call_s = 0;
  double stolen_s = 0;  // Σ calls' time × their interference share
};

constexpr size_t kWindows = kCommWindowNames.size();

// Loads by window and by the stream the actions run on: streams run side by side (a ZeRO-3
// unit's gathers on zero-comm beside the gradient reduce-scatters on dp-comm), so what a window
// leaves exposed is its most exposed stream's; the actions on the critical path add up.
using Loads = std::array<std::array<WindowLoad, kNumStreams>, kWindows>;

// A stage's folded actions priced: compute per micro-batch, communication by window and
// stream, the optimizer step, and one record per kind and size of communication.
struct PricedActions {
  MicrobatchCompute compute;
  Loads per_mb{}, per_step{};
  // The pipeline messages of the fill and drain, exposed where the schedule overlaps the others:
  // the one thing of the passes' prices that tells GPipe from 1F1B (pipeline_messages_overlap).
  double fill_drain_s = 0;
  double optimizer_s = 0;
  double optimizer_bytes = 0;
  std::vector<CollectiveEstimate> records;
};

// Adds the folded actions of `rank` (one of its stage's), priced action by action. `spans` holds
// the groups of one rank of its stage (or of any stage when all are placed alike).
void price_into(const StageContext& ctx, int64_t rank, SpanCache& spans,
                const std::vector<FoldedAction>& folded, PricedActions& p);

// Adds one priced half of a stage's folded program to the other.
void add_priced(PricedActions& to, const PricedActions& from);

// What the stage's priced actions leave on the critical path; with `records`, each record with
// its share of its window's exposed time.
StageTiming stage_timing(const StageContext& ctx, const PricedActions& p,
                         std::vector<CollectiveEstimate>* records);

}  // namespace shardplan
