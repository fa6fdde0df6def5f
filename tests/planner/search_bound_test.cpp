// The search's lower bound: never above the step it bounds, and a search that skips what the bound
// rules out returns exactly what timing every fitting layout returns.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "planner/explain.h"
#include "planner/report.h"
#include "planner/search.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

namespace {

PlannerCase on(const std::string& cluster, const std::string& model, int nodes,
               int64_t global_batch, int64_t seq_len, const std::string& fix = "") {
  PlannerCase c = planner_case(model, nodes, global_batch, seq_len, fix);
  c.cluster = load_cluster(cluster, nodes);
  return c;
}

// Dense and MoE models, one and several nodes, tensor, pipeline, context and expert parallelism.
std::vector<PlannerCase> cases() {
  return {planner_case("llama3-8b", 1, 32, 4096), planner_case("llama3-8b", 2, 64, 8192),
          planner_case("mixtral-8x7b", 2, 128, 4096), on("dgx-a100", "gpt3-175b", 8, 256, 2048),
          on("dgx-a100", "llama3-70b", 4, 128, 4096, "tp=8")};
}

void check_same(const SearchResult& bounded, const SearchResult& full) {
  CHECK(full.bounded == 0);
  CHECK(bounded.timed + bounded.bounded == bounded.fitting);
  CHECK(bounded.fitting == full.fitting);
  CHECK(bounded.pruned_for_memory == full.pruned_for_memory);
  REQUIRE(bounded.top.size() == full.top.size());
  for (size_t i = 0; i < full.top.size(); ++i) {
    CHECK(bounded.top[i].index == full.top[i].index);
    CHECK(bounded.top[i].objective == full.top[i].objective);
  }
  REQUIRE(bounded.alternatives.size() == full.alternatives.size());
  for (size_t i = 0; i < full.alternatives.size(); ++i) {
    const Alternative &b = bounded.alternatives[i], &f = full.alternatives[i];
    CHECK(b.field == f.field);
    CHECK(b.value == f.value);
    CHECK(b.adjacent == f.adjacent);
    CHECK(b.best.index == f.best.index);
  }
  REQUIRE(bounded.pruned.size() == full.pruned.size());
  for (size_t i = 0; i < full.pruned.size(); ++i)
    CHECK(bounded.pruned[i].index == full.pruned[i].index);
  CHECK(format_top(bounded) == format_top(full));
  CHECK(explain_ranking(bounded) == explain_ranking(full));
}

}  // namespace

TEST_CASE(
    "the lower bound is never above the step it bounds, on every ZeRO stage, nor is the bound of "
    "its first stages alone above it",
    "[planner][bound]") {
  for (const PlannerCase& c : cases()) {
    for (const auto& [streams, accumulation] :
         {std::pair{StreamExecution::concurrent, GradAccumulation::fused},
          std::pair{StreamExecution::program_order, GradAccumulation::fused},
          std::pair{StreamExecution::concurrent, GradAccumulation::autograd}}) {
      ExecutionOptions x;
      x.streams = streams;
      // AccumulateGrad adds a ZeRO-2/3 rank's shard only: a bound per kind of ZeRO stage.
      x.grad_accumulation = accumulation;
      EstimateCache cache;
      // Step times only: the allocator's replay (memory) is left out, as the search leaves it.
      EstimateCache timing;
      timing.replay_allocator = false;
      int64_t checked = 0;
      for (const Layout& l : c.enumerate().layouts) {
        if (++checked % 7 != 0) continue;  // a sample spread over every shape
        INFO(layout_label(l) << " of " << c.model.name);
        const double bound = step_time_lower_bound(c.model, c.cluster, c.training, l, x, &cache);
        CHECK(bound <= estimate(c.model, c.cluster, c.training, l, x, &timing).step_time_s);
        CHECK(bound == step_time_lower_bound(c.model, c.cluster, c.training, l, x));
        Layout without = l;
        without.recompute = Recompute::none;
        CHECK(step_time_lower_bound(c.model, c.cluster, c.training, without, x) <= bound);
        // Priced from the first stage only: the others count as taking no time.
        const auto first_stage_only = [](double) { return true; };
        CHECK(step_time_lower_bound(c.model, c.cluster, c.training, l, x, nullptr,
                                    first_stage_only) <= bound);
      }
    }
  }
}

TEST_CASE("a search that skips what the lower bound rules out ranks exactly as timing every layout",
          "[planner][bound]") {
  for (const PlannerCase& c : cases()) {
    for (const auto& [o, top_k] :
         {std::pair{Objective::time, 1}, std::pair{Objective::time, 5},
          std::pair{Objective::tokens_per_s, 5}, std::pair{Objective::cost, 5}}) {
      INFO(c.model.name << " on " << c.cluster.nodes << " node(s), objective "
                        << enum_name(o, kObjectiveNames) << ", top " << top_k);
      SearchOptions bounded, full;
      bounded.objective = full.objective = o;
      bounded.top_k = full.top_k = top_k;
      full.bound = false;
      const SearchResult b = c.search(bounded);
      check_same(b, c.search(full));
      CHECK(b.bounded > 0);
    }
  }
}

TEST_CASE("the bounded search keeps the same layouts with a framework to run and with --explain",
          "[planner][bound]") {
  const PlannerCase c = planner_case("llama3-8b", 2, 64, 4096);
  SearchOptions bounded, full;
  bounded.runs_on = full.runs_on = ExportFormat::megatron;
  bounded.keep_refused = full.keep_refused = true;
  full.bound = false;
  check_same(c.search(bounded), c.search(full));
}
