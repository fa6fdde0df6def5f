// A set's scores from its priced rows: the headline (with and without the pathological slices the
// set's README names), each pathological slice apart, memory, fits against crashes, the planner's
// pick within each group of layouts doing the same work, and the error per slice (GPU, precision,
// TP within or across nodes, PP depth, micro-batches per step, nodes).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "validate/fidelity_set.h"
#include "validate/pricing.h"
#include "validate/scores.h"

namespace shardplan {

struct SliceScore {
  std::string dimension;  // "pp depth", or "pathological"
  std::string label;      // "2-4", "TP > 8"
  ErrorStats step_time;
};

struct RefusalCount {
  std::string reason;
  int count = 0;
  std::string example;  // the first full message, when validation gave one
};

// Over each group's rows outside the pathological slices (a degraded run measures the cluster's
// trouble, not what its layout costs).
struct PlannerScores {
  int regret_groups = 0;  // groups with ≥ 2 measured layouts and a predicted fit
  double mean_regret_pct = 0;
  int spearman_groups = 0;  // groups with ≥ 3 measured layouts (and a ranking on both sides)
  double mean_spearman = 0;
};

struct SetScores {
  std::string name;
  std::string framework;
  std::string figure_field;  // what the set publishes: "iteration_time_ms", "tok_s_gpu"
  MemoryReading memory_reading = MemoryReading::allocator_reserved;
  int rows = 0;
  int priced = 0;                      // rows the cost model priced (timed, crashed or memory only)
  int refused = 0;                     // rows = priced + refused
  std::vector<RefusalCount> refusals;  // most frequent first
  ErrorStats step_time;                // every priced row with a measured time
  ErrorStats step_time_without_pathological;
  std::vector<SliceScore> pathological;
  std::optional<ErrorStats> memory;  // where the set reports memory
  FitsConfusion fits;
  PlannerScores planner;
  std::vector<SliceScore> slices;
};

// predicted ÷ measured step time − 1, for a priced row with a measured time.
double time_error(const FidelityRow& row, const PricedRow& p);
// The predicted memory as the set's figure reads it: what the caching allocator reserves on the
// rank the set measured (the worst stage's, or the first's), plus the runtime's reserve where the
// set read nvidia-smi.
double predicted_memory_bytes(const FidelitySet& s, const PricedRow& p);

// `priced` holds one entry per row of `s` (price_set).
SetScores score_set(const FidelitySet& s, const std::vector<PricedRow>& priced);

// The standard slices a row falls in: (dimension, label) pairs.
std::vector<std::pair<std::string, std::string>> row_slices(const FidelityRow& row);

}  // namespace shardplan
