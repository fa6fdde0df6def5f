#include "planner/search.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "core/placement.h"
#include "planner/explain.h"
#include "planner/report.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

TEST_CASE("the chosen layouts fit in device memory and what was pruned does not",
          "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 1, 32, 4096);
  const SearchResult r = c.search();
  REQUIRE(r.top.size() == 5);
  CHECK(r.fitting + r.pruned_for_memory == r.enumerated.valid);
  CHECK(r.pruned_for_memory > 0);
  for (const Ranked& k : r.top) {
    CHECK(k.estimate.fits);
    const RankMemory& m = k.estimate.memory();
    CHECK(m.peak_bytes() + m.runtime_reserved_bytes <= c.cluster.device.memory_bytes());
    CHECK_NOTHROW(validate_layout(k.layout, c.model, c.cluster, c.training, "test"));
  }
  for (size_t i = 1; i < r.top.size(); ++i) CHECK(r.top[i - 1].objective <= r.top[i].objective);
  for (const MemoryMiss& miss : r.pruned) CHECK_FALSE(miss.memory.fits());
}

TEST_CASE("on one node no group is split across nodes, on two, tensor parallelism stays on NVLink",
          "[planner][search]") {
  for (int nodes : {1, 2}) {
    const PlannerCase c = planner_case("llama3-8b", nodes, 64, 4096);
    const SearchResult r = c.search();
    REQUIRE_FALSE(r.top.empty());
    const Layout& best = r.top.front().layout;
    for (const auto& [g, name] : kGroupNames) {
      INFO(name << " of " << layout_label(best) << " on " << nodes << " node(s)");
      const GroupSpan span = group_span(c.cluster, best, 0, g);
      if (nodes == 1 || g == Group::tp) CHECK(span.nodes == 1);
    }
  }
}

TEST_CASE(
    "a small model on 8 GPUs takes no tensor or context parallelism, under 1F1B plain data "
    "parallelism",
    "[planner][search]") {
  // Its kernels are too small to fill an H100, so each rank's step is bound by the host issuing
  // them: splitting a layer's GEMMs over tp ranks saves nothing. Pipelining saves only where the
  // stages' weight gradients overlap each other, as ZB-H1's W do after a single micro-batch's B.
  const SearchResult any = planner_case("gpt-small", 1, 64, 256).search();
  REQUIRE_FALSE(any.top.empty());
  CHECK(any.top.front().layout.tp == 1);
  CHECK(any.top.front().layout.cp == 1);
  const SearchResult r = planner_case("gpt-small", 1, 64, 256, "schedule=1f1b").search();
  REQUIRE_FALSE(r.top.empty());
  const Layout& best = r.top.front().layout;
  CHECK(best.dp == 8);
  CHECK(best.tp == 1);
  CHECK(best.pp == 1);
  CHECK(best.cp == 1);
}

TEST_CASE("a fixed 1f1b with virtual stages is the interleaved 1F1B, as estimate reads it",
          "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 1, 64, 4096);
  const LayoutSpec fixed = parse_layout_string("pp=2,vpp=2,schedule=1f1b");
  const SearchResult r = plan_search(c.model, c.cluster, c.training, fixed, {});
  REQUIRE_FALSE(r.top.empty());
  for (const Ranked& each : r.top) {
    CHECK(each.layout.vpp == 2);
    CHECK(each.layout.schedule == Schedule::interleaved);
  }
  Training t = c.training;
  const Layout estimated = resolve_layout(fixed, c.model, c.cluster, t, "test");
  CHECK(estimated.schedule == Schedule::interleaved);
}

TEST_CASE("identical results on every run and with any number of threads", "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 2, 64, 4096);
  SearchOptions one_thread;
  one_thread.threads = 1;
  const SearchResult a = c.search(), b = c.search(), single = c.search(one_thread);
  for (const SearchResult* r : {&b, &single}) {
    CHECK(format_top(*r) == format_top(a));
    CHECK(explain_ranking(*r) == explain_ranking(a));
    CHECK(r->fitting == a.fitting);
    CHECK(r->pruned_for_memory == a.pruned_for_memory);
    REQUIRE(r->alternatives.size() == a.alternatives.size());
    for (size_t i = 0; i < a.alternatives.size(); ++i)
      CHECK(r->alternatives[i].best.index == a.alternatives[i].best.index);
  }
}

TEST_CASE("the search, enumerating shape by shape, counts and refuses what enumerate_layouts does",
          "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 2, 64, 4096);
  const Candidates all = c.enumerate();
  REQUIRE_FALSE(all.rejections.empty());
  for (int threads : {1, 2}) {
    SearchOptions o;
    o.threads = threads;
    const SearchResult counted = c.search(o);
    CHECK(counted.enumerated.rejections.empty());  // counted, not kept, unless asked
    o.keep_refused = true;
    const SearchResult r = c.search(o);
    for (const SearchResult* e : {&counted, &r}) {
      CHECK(e->enumerated.shapes == all.shapes);
      CHECK(e->enumerated.shapes_invalid == all.shapes_invalid);
      CHECK(e->enumerated.valid == std::ssize(all.layouts));
      CHECK(e->enumerated.layouts_invalid == all.layouts_invalid);
    }
    REQUIRE(r.enumerated.rejections.size() == all.rejections.size());
    for (size_t i = 0; i < all.rejections.size(); ++i) {
      CHECK(r.enumerated.rejections[i].layout == all.rejections[i].layout);
      CHECK(r.enumerated.rejections[i].reason == all.rejections[i].reason);
    }
    // The kept layouts are those enumerated.
    for (const Ranked& k : r.top)
      CHECK(std::find(all.layouts.begin(), all.layouts.end(), k.layout) != all.layouts.end());
  }
}

TEST_CASE("the objectives rank alike on one cluster and batch", "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 1, 32, 4096);
  SearchOptions cost, tokens;
  cost.objective = Objective::cost;
  tokens.objective = Objective::tokens_per_s;
  const SearchResult by_time = c.search(), by_cost = c.search(cost), by_tokens = c.search(tokens);
  const Estimate& e = by_time.top.front().estimate;
  CHECK(by_cost.top.front().index == by_time.top.front().index);
  CHECK(by_tokens.top.front().index == by_time.top.front().index);
  CHECK(by_cost.top.front().objective == Approx(e.step_time_s * 8 / (32.0 * 4096)));
  CHECK(by_tokens.top.front().objective == Approx(-e.tokens_per_s));
}

TEST_CASE("pins from --fix are kept and --export keeps what the framework runs",
          "[planner][search]") {
  SearchOptions megatron;
  megatron.runs_on = ExportFormat::megatron;
  megatron.top_k = 50;
  megatron.keep_refused = true;
  const SearchResult r =
      planner_case("llama3-8b", 2, 64, 4096, "tp=8,recompute=selective").search(megatron);
  REQUIRE_FALSE(r.top.empty());
  for (const Ranked& k : r.top) {
    CHECK(k.layout.tp == 8);
    CHECK(k.layout.recompute == Recompute::selective);
    CHECK_FALSE(unsupported_by(ExportFormat::megatron, k.layout));
  }
  CHECK(
      std::any_of(r.enumerated.rejections.begin(), r.enumerated.rejections.end(),
                  [](const Rejection& x) { return x.field == "--export" && x.layout.zero == 2; }));
}

TEST_CASE("explaining keeps every layout pruned for memory, closest to fitting first",
          "[planner][search]") {
  const PlannerCase c = planner_case("llama3-8b", 1, 32, 4096);
  SearchOptions explain;
  explain.keep_refused = true;
  const SearchResult r = c.search(explain);
  REQUIRE(static_cast<int64_t>(r.pruned.size()) == r.pruned_for_memory);
  const auto need = [](const MemoryMiss& m) {
    return static_cast<double>(m.memory.peak_bytes() + m.memory.runtime_reserved_bytes);
  };
  for (size_t i = 1; i < r.pruned.size(); ++i) CHECK(need(r.pruned[i - 1]) <= need(r.pruned[i]));
}
