// The search: every candidate layout priced by the cost model — memory first, and only what fits is
// timed — and ranked by an objective, with ties broken by memory and then by enumeration order, so
// that every run gives the same answer. Threads (one per core) take the shapes in turn, each
// enumerating a shape's layouts and pricing them there, keeping only the layouts it may report
// (so that a search of millions holds none of them at once). A fitting
// layout whose lower bound (simulator/estimate.h's step_time_lower_bound) is worse than every
// layout it could displace is not timed in full: it could enter neither the ranking nor the best of
// any of its fields' values, so the result is the one timing every layout gives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "core/layout.h"
#include "planner/enumerate.h"
#include "planner/export.h"
#include "simulator/estimate.h"

namespace shardplan {

// time: shortest step; tokens-per-s: most tokens per second (on one cluster and batch the same
// order as time); cost: least device time per token (node_count.h also tries fewer nodes).
enum class Objective { time, tokens_per_s, cost };
inline constexpr EnumNames<Objective, 3> kObjectiveNames{{{Objective::time, "time"},
                                                          {Objective::tokens_per_s, "tokens-per-s"},
                                                          {Objective::cost, "cost"}}};

inline constexpr int64_t kDefaultMaxLayouts = 4'000'000;

struct SearchOptions {
  Objective objective = Objective::time;
  int top_k = 5;
  std::optional<ExportFormat> runs_on;  // only layouts this framework runs (--export)
  // Keep every layout refused, by validation or for memory (--explain); otherwise only the
  // rejections' counts and the layouts closest to fitting.
  bool keep_refused = false;
  int threads = 2;
  bool bound = true;  // skip the layouts the lower bound rules out (off: time every one that fits)
  bool progress = false;       // a progress line on stderr
  // The most layouts a search visits (count_layouts), refused before any is priced: about 1 s per
  // million on this 2-core machine (docs/measurements.md, 2026-11-27); its memory does not grow
  // with them unless keep_refused holds every refused one. No preset search comes near.
  int64_t max_layouts = kDefaultMaxLayouts;
  ExecutionOptions execution;  // how every candidate is priced (--profile)
};

struct Ranked {
  Layout layout;
  Estimate estimate;
  double objective = 0;  // lower is better
  int64_t index = 0;     // enumeration order
};

// The best fitting layout with another value of one field than the winner's.
struct Alternative {
  std::string_view
      field;  // "tp", "pp", "cp", "dp", "ep", "zero", "mbs", "recompute", "sp", "vpp", "schedule"
  int value = 0;          // the field's value (an enum's index for recompute and schedule)
  bool adjacent = false;  // the nearest value below or above the winner's among those that fit
  Ranked best;
};

// A valid layout that does not fit: its worst stage's memory against what the device offers.
struct MemoryMiss {
  Layout layout;
  RankMemory memory;
  int64_t index = 0;
};

struct SearchResult {
  Enumerated enumerated;          // how many layouts were valid, and what was not
  int64_t pruned_for_memory = 0;  // valid but over the device's memory
  int64_t fitting = 0;            // fit: timed in full, or ruled out by their lower bound
  int64_t timed = 0;              // fitting layouts priced in full and ranked
  int64_t bounded = 0;            // fitting layouts whose lower bound could not rank
  std::vector<Ranked> top;        // best first, at most top_k
  // The best fitting layout for each value of each field (tp=16, pp=2, zero=3, ...) other than
  // the winner's, so that the explanation can say why the winner's neighbours lose.
  std::vector<Alternative> alternatives;
  // The layouts that came closest to fitting (every pruned one with keep_refused), smallest
  // overflow first.
  std::vector<MemoryMiss> pruned;
  double wall_s = 0;  // enumeration and pricing
  int threads = 1;    // that priced the layouts
};

// Prices every candidate of `model` on `cluster` that `fixed` allows and ranks what fits.
SearchResult plan_search(const Model& model, const Cluster& cluster, const Training& training,
                         const LayoutSpec& fixed, const SearchOptions& options);

// The objective's value for one estimate, lower is better.
double objective_value(Objective o, const Estimate& e, const Cluster& cluster,
                       const Training& training);

// A lower bound on objective_value for every estimate of `l` whose step takes at least
// `step_time_s`: each objective grows with the step time.
double objective_lower_bound(Objective o, double step_time_s, const Layout& l,
                             const Cluster& cluster, const Training& training);

}  // namespace shardplan
