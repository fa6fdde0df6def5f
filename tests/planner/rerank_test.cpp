// Re-ranking the search's best layouts by simulating their steps.
#include "planner/rerank.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "simulator/plan_simulation.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

TEST_CASE("the top layouts re-ranked by their simulated steps", "[planner][rerank]") {
  for (Objective o : {Objective::time, Objective::cost}) {
    const PlannerCase c = planner_case("llama3-70b", 4, 128, 8192);
    SearchOptions options;
    options.objective = o;
    const SearchResult r = c.search(options);
    REQUIRE(r.top.size() == 5);
    const std::vector<Resimulated> re =
        rerank_by_simulation(c.model, c.cluster, c.training, r.top, o);
    REQUIRE(re.size() == r.top.size());
    std::vector<int> ranks;
    for (size_t i = 0; i < re.size(); ++i) {
      const Resimulated& k = re[i];
      ranks.push_back(k.search_rank);
      const Ranked& searched = r.top[static_cast<size_t>(k.search_rank - 1)];
      CHECK(k.ranked.layout == searched.layout);
      // The step of `simulate`, and the objective on it: the step itself, or device-seconds per
      // token.
      const PlanSimulation s =
          simulate_plan(c.model, c.cluster, c.training, searched.layout, {}, true);
      CHECK(k.step_time_s == s.step_time_s);
      CHECK(k.peak_bytes == s.memory[s.worst_memory].peak_bytes());
      const double per_token = double(c.cluster.world()) / double(c.training.tokens_per_step());
      CHECK(k.objective ==
            Approx(o == Objective::time ? s.step_time_s : s.step_time_s * per_token));
      if (i > 0 && re[i - 1].fits == k.fits) CHECK(re[i - 1].objective <= k.objective);
    }
    std::sort(ranks.begin(), ranks.end());
    CHECK(ranks == std::vector<int>{1, 2, 3, 4, 5});
    const std::string table = format_rerank(re);
    CHECK(table.find("simulated event by event") != std::string::npos);
    CHECK(table.find(re.front().search_rank == 1 ? "keeps the search's first layout"
                                                 : "puts the search's #") != std::string::npos);
  }
}
