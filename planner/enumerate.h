// Candidate layouts for a model on a cluster: every distinct combination of dp, tp, pp, cp, ep,
// ZeRO stage, micro-batch size, recompute, sequence parallelism, virtual stages, the split of the
// layers over them (core/stage_split.h's candidate_splits, or the one a framework that splits the
// layers itself runs) and schedule, each checked by core's validate_layout, with the rule that
// rejects each invalid one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"
#include "planner/export.h"

namespace shardplan {

// A layout validate_layout refused. A shape (tp, cp, pp, dp, ep) whose simplest layout is refused
// for a rule on the shape itself is rejected whole, once, instead of once per inner combination.
struct Rejection {
  Layout layout;
  bool whole_shape = false;  // every ZeRO stage, micro-batch, recompute, sp, vpp and schedule
  std::string field;         // "layout.tp"
  std::string reason;        // "16 does not divide num_key_value_heads=8"
};

// What an enumeration counted and refused.
struct Enumerated {
  std::vector<Rejection> rejections;  // in enumeration order
  int64_t shapes = 0;                 // (tp, cp, pp, dp, ep) combinations tried
  int64_t shapes_invalid = 0;
  int64_t valid = 0;            // layouts validate_layout accepted
  int64_t layouts_invalid = 0;  // single layouts refused inside a valid shape

  // Another part's counts added, its rejections after these.
  void add(Enumerated&& part);
};

// The valid layouts themselves beside the counts.
struct Candidates : Enumerated {
  std::vector<Layout> layouts;  // valid, in enumeration order (which breaks ties)
};

// The positive divisors of n, increasing.
std::vector<int> divisors(int64_t n);

// Every distinct layout of `training` on `cluster`, restricted to the fields `fixed` sets (--fix).
// A field without a choice takes one value: ep = 1 on a dense model, sp off when tp = 1, ZeRO 0
// when nothing is data-parallel, vpp = 1 and 1F1B when pp = 1, interleaved exactly when vpp > 1.
// A fixed field is taken as given and left to validate_layout, so a bad --fix gets its reason.
// A fixed global batch must already be training.global_batch (the caller applies it). With
// `runs_on`, a layout that framework cannot run is rejected too (field "--export"). The shapes are
// split over `threads` threads, each enumerating its shapes alone, and joined in order.
Candidates enumerate_layouts(const Model& model, const Cluster& cluster, const Training& training,
                             const LayoutSpec& fixed,
                             std::optional<ExportFormat> runs_on = std::nullopt, int threads = 1);

// The shapes (tp, cp, pp, dp, ep) enumerate_layouts runs over, in its order, and the candidates
// of one of them, each handed to `visit` in enumeration order as it is found: the search
// enumerates and prices a shape at a time instead of holding every layout. Returns the shape's
// counts and (with `keep_rejections`) its rejections.
std::vector<Layout> enumeration_shapes(const Model& model, const Cluster& cluster,
                                       const Training& training, const LayoutSpec& fixed);
Enumerated visit_shape(const Model& model, const Cluster& cluster, const Training& training,
                       const LayoutSpec& fixed, std::optional<ExportFormat> runs_on,
                       const Layout& shape, bool keep_rejections,
                       const std::function<void(const Layout&)>& visit);

// How many layouts enumerate_layouts visits (valid or not, before --export's filter), counted
// from its loops without validating any: what plan_search checks against --max-layouts before
// doing the work.
int64_t count_layouts(const Model& model, const Cluster& cluster, const Training& training,
                      const LayoutSpec& fixed);

}  // namespace shardplan
