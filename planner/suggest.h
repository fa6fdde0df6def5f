// When the request cannot be met: an error naming the rules when no layout is valid at all, and
// when nothing fits, the smallest changes that would make something fit — a pinned field freed or
// set to its least memory-hungry value (recompute=full, zero=3, mbs=1), or more nodes — each found
// by searching again with the change.
#pragma once

#include <string>
#include <vector>

#include "planner/search.h"

namespace shardplan {

// Throws InputError when no layout was valid: the rules that rejected most candidates, and, when
// the cluster has more devices than any layout can use, the most nodes with a valid layout.
// The search keeps the rejections only for --explain: they are enumerated again (the search did
// no more than that) under `options`' framework filter.
void require_valid(const SearchResult& r, const Model& model, const Cluster& cluster,
                   const Training& training, const LayoutSpec& fixed, const SearchOptions& options);

struct Suggestion {
  std::string
      change;  // "recompute=full instead of --fix recompute=none", "--nodes 16 (2x the nodes)"
  int64_t fitting = 0;  // layouts that fit with the change
  Ranked best;
};

// Changes to the pins of `fixed` first, then doubling the nodes up to `max_node_factor` times, with
// the pins and then without (the first count that fits is named). CPU offload is not modelled and
// so never suggested.
std::vector<Suggestion> suggest_changes(const Model& model, const Cluster& cluster,
                                        const Training& training, const LayoutSpec& fixed,
                                        const SearchOptions& options, int max_node_factor = 64);

}  // namespace shardplan
