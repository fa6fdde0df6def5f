#include "planner/node_count.h"

#include <catch2/catch.hpp>

#include "core/presets.h"

using namespace shardplan;

TEST_CASE("the cost objective tries the cluster and each halving of it, and takes the cheapest",
          "[planner][node_count]") {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 4);
  Training t;
  t.global_batch = 64;
  t.seq_len = 4096;
  SearchOptions cost;
  cost.objective = Objective::cost;
  const std::vector<NodeCountSearch> runs = search_node_counts(m, c, t, {}, cost);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].cluster == c);
  CHECK(runs[1].cluster.nodes == 2);
  CHECK(runs[2].cluster.nodes == 1);
  const std::optional<size_t> best = cheapest(runs);
  REQUIRE(best);
  for (const NodeCountSearch& run : runs) {
    REQUIRE_FALSE(run.result.top.empty());
    const Ranked& top = run.result.top.front();
    // Device-seconds per token: the step on every device of that cluster, over the step's tokens.
    CHECK(top.objective == Approx(top.estimate.step_time_s *
                                  static_cast<double>(run.cluster.world()) / (64.0 * 4096)));
    CHECK(runs[*best].result.top.front().objective <= top.objective);
  }
}
