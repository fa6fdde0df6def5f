#include "planner/node_count.h"

namespace shardplan {

std::vector<NodeCountSearch> search_node_counts(const Model& model, const Cluster& cluster,
                                                const Training& training, const LayoutSpec& fixed,
                                                const SearchOptions& options) {
  std::vector<NodeCountSearch> out;
  for (int nodes = cluster.nodes; nodes >= 1; nodes /= 2) {
    Cluster c = nodes == cluster.nodes ? cluster : with_nodes(cluster, nodes, cluster.name);
    SearchResult r = plan_search(model, c, training, fixed, options);
    out.push_back({std::move(c), std::move(r)});
  }
  return out;
}

std::optional<size_t> cheapest(const std::vector<NodeCountSearch>& searches) {
  std::optional<size_t> best;
  for (size_t i = 0; i < searches.size(); ++i) {
    const SearchResult& r = searches[i].result;
    if (r.top.empty()) continue;
    if (!best || r.top.front().objective < searches[*best].result.top.front().objective) best = i;
  }
  return best;
}

}  // namespace shardplan
