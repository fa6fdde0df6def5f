// Every stage of a layout timed from its priced folded program (simulator/stage_pricing.h): stages
// placed alike with the same layers once, the priced passes shared between layouts through an
// EstimateCache; and the step's critical path over them. estimate() assembles an Estimate from
// these; step_time_lower_bound prices the passes alone (both in simulator/estimate.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "simulator/estimate.h"
#include "simulator/pipeline_model.h"
#include "simulator/stage_pricing.h"

namespace shardplan {

// Throws InputError when the device has no peak for the training dtype.
StageContext make_stage_context(const Model& m, const Cluster& c, const Training& t,
                                const Layout& l, const ExecutionOptions& x, EstimateCache* cache);

// Every stage's time per micro-batch (compute and exposed communication), and the timing of the
// stage with the most per-step work (the first of those with most): every stage waits for it at
// the optimizer step.
struct StageTimings {
  StageTiming most_step_work;
  std::vector<double> microbatch_s;
  // The forward's, the backward's and (split backward) the W actions' compute inside microbatch_s.
  std::vector<double> forward_s, backward_s, weight_grad_s;
  SplitPasses split() const { return {forward_s, weight_grad_s, backward_s}; }
  bool complete = true;  // every stage timed; otherwise those not timed count as taking no time
};

// What of a stage's folded program is priced: all of it, or its passes alone (the step's lower
// bound, step_time_lower_bound).
enum class Priced { program, passes };

// What an EstimateCache keeps a stage's priced halves by: the layout without what they do not
// read. The same for every stage of a layout, so made once for all of them.
struct StageCacheKeys {
  // ZeRO 0 (2 for ZeRO-2/3 where the gradients' accumulation adds a shard), no split
  // (passes_split_key gives a rank's part of it), GPipe as 1F1B
  Layout passes;
  size_t passes_hash = 0;
  Layout data_parallel;  // without recomputation; only where the whole program is priced
};

// Times every stage. Stages with the same layers, placed alike, take the same time: only the
// first of them is timed.
class StageTimer {
 public:
  StageTimer(const StageContext& ctx, EstimateCache* cache, Priced what);

  // One stage, its collectives' figures into `records` where given.
  StageTiming operator()(int stage, std::vector<CollectiveEstimate>* records);

  // Every stage timed, first to last; with `enough`, only until it holds of the timings so far.
  StageTimings all_stages(const std::function<bool(const StageTimings&)>& enough = nullptr);

  static int64_t stage_rank(const Layout& l, int stage) {
    return rank_of(l, RankCoord{0, 0, 0, 0, stage});
  }

 private:
  const StageContext& ctx_;
  EstimateCache* cache_;
  Priced what_;
  bool alike_;
  SpanCache shared_spans_;
  std::optional<StageCacheKeys> keys_;  // with a cache
};

// Step time on the critical path: the pipeline over the slowest stage, then the per-step work of
// the stage that has the most of it.
double critical_path_s(const Layout& l, const StageTimings& timings);

}  // namespace shardplan
