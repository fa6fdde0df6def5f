// --objective cost over cluster sizes: the same search on the cluster and on each halving of its
// nodes, since a smaller cluster often trains more cheaply per token (less communication, a
// higher share of the peak), and the cheapest of them.
#pragma once

#include <optional>
#include <vector>

#include "planner/search.h"

namespace shardplan {

struct NodeCountSearch {
  Cluster cluster;
  SearchResult result;
};

// The cluster as given first, then nodes / 2, nodes / 4, ... down to one node.
std::vector<NodeCountSearch> search_node_counts(const Model& model, const Cluster& cluster,
                                                const Training& training, const LayoutSpec& fixed,
                                                const SearchOptions& options);

// The one whose best layout has the lowest objective, the larger cluster on a tie; nullopt when
// nothing fits on any.
std::optional<size_t> cheapest(const std::vector<NodeCountSearch>& searches);

}  // namespace shardplan
