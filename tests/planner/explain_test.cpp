#include "planner/explain.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "core/human_format.h"
#include "core/presets.h"
#include "core/stage_split.h"
#include "planner/report.h"

using namespace shardplan;

namespace {

struct Priced {
  Layout layout;
  Estimate estimate;
};

Priced priced(const std::string& model, int nodes, const std::string& layout) {
  const Model m = load_model(model);
  const Cluster c = load_cluster("dgx-h100", nodes);
  Training t;
  t.global_batch = 16;
  t.seq_len = 2048;
  const Layout l = resolve_layout(parse_layout_string(layout), m, c, t, "test");
  return {l, estimate(m, c, t, l)};
}

const CollectiveEstimate& collective(const Estimate& e, std::string_view name) {
  for (const CollectiveEstimate& c : e.collectives)
    if (c.name() == name) return c;
  FAIL("no " << name);
  return e.collectives.front();
}

}  // namespace

TEST_CASE("tp over two nodes loses on its all-reduce over InfiniBand", "[planner][explain]") {
  // gpt3-175b has 96 heads, so tp=16 is valid; it spans two 8-GPU nodes, where tp=8 with pp=2
  // keeps the all-reduce on NVLink.
  const Priced tp16 = priced("gpt3-175b", 2, "tp=16,zero=3,recompute=full");
  const Priced tp8 = priced("gpt3-175b", 2, "tp=8,pp=2,zero=3,recompute=full");
  const Estimate &lo = tp16.estimate, &wi = tp8.estimate;
  REQUIRE(lo.step_time_s > wi.step_time_s);
  const std::string why = why_slower(lo, wi);
  CHECK_THAT(why, Catch::StartsWith(
                      fmt::format("+{} per step ({:+.1f}%, {} against {}): exposed tensor-parallel "
                                  "communication +",
                                  format_seconds(lo.step_time_s - wi.step_time_s),
                                  100 * (lo.step_time_s / wi.step_time_s - 1),
                                  format_seconds(lo.step_time_s), format_seconds(wi.step_time_s))));
  const CollectiveEstimate& slow = collective(lo, "tp all_reduce");
  const CollectiveEstimate& fast = collective(wi, "tp all_reduce");
  CHECK(slow.span.nodes == 2);
  CHECK_THAT(why, Catch::Contains(fmt::format(
                      "tp all_reduce spans 2 nodes on infiniband at {:.1f} GB/s busbw, ",
                      slow.cost.busbw_GBps)));
  CHECK_THAT(why, Catch::Contains(
                      fmt::format(" of the {:.1f} GB/s it gets on nvlink", fast.cost.busbw_GBps)));
}

TEST_CASE("what the loser wins back is named: a smaller bubble bought with smaller micro-batches",
          "[planner][explain]") {
  // 16 micro-batches of 1 over pp=4 leave less bubble than 4 of 4, but recomputing every layer
  // costs more than the bubble saves.
  const Priced small = priced("llama3-8b", 2, "tp=4,pp=4,mbs=1,recompute=full");
  const Priced large = priced("llama3-8b", 2, "tp=4,pp=4,mbs=4");
  const Estimate &lo = small.estimate, &wi = large.estimate;
  REQUIRE(lo.step_time_s > wi.step_time_s);
  REQUIRE(wi.time.bubble_s - lo.time.bubble_s > 0.1 * (lo.step_time_s - wi.step_time_s));
  CHECK_THAT(why_slower(lo, wi),
             Catch::EndsWith(fmt::format(
                 "; it gains back pipeline bubble -{} ({} of the pipeline against {})",
                 format_seconds(wi.time.bubble_s - lo.time.bubble_s),
                 format_percent(lo.bubble_fraction), format_percent(wi.bubble_fraction))));
}

TEST_CASE("equal step times are a tie, or a difference in memory", "[planner][explain]") {
  const Estimate e = priced("llama3-8b", 1, "tp=2,zero=1").estimate;
  CHECK_THAT(why_slower(e, e),
             Catch::StartsWith("ties with it (" + format_seconds(e.step_time_s) + " per step"));
  Estimate heavier = e;
  heavier.stages[static_cast<size_t>(heavier.worst_stage)].state.parameters += int64_t{1} << 30;
  CHECK(
      why_slower(heavier, e) ==
      fmt::format("as fast ({} per step) but needs {} against {}", format_seconds(e.step_time_s),
                  format_gib(static_cast<double>(e.memory().reserved_bytes() + (int64_t{1} << 30))),
                  format_gib(static_cast<double>(e.memory().reserved_bytes()))));
}

TEST_CASE("the explanation names the winner, then its nearest alternatives", "[planner][explain]") {
  const Model m = load_model("llama3-8b");
  const Cluster c = load_cluster("dgx-h100", 2);
  Training t;
  t.global_batch = 64;
  t.seq_len = 4096;
  const SearchResult r = plan_search(m, c, t, {}, {});
  const std::vector<std::string> sentences = explain_ranking(r, 3);
  REQUIRE(sentences.size() == 4);
  const Estimate& e = r.top.front().estimate;
  CHECK_THAT(sentences[0], Catch::StartsWith(layout_label(r.top.front().layout) + " wins at " +
                                             format_seconds(e.step_time_s) + " per step (" +
                                             format_percent(e.mfu) + " MFU"));
  CHECK_THAT(sentences[1],
             Catch::StartsWith("the runner-up (" + layout_label(r.top[1].layout) + "): "));
  for (size_t i = 2; i < sentences.size(); ++i)
    CHECK_THAT(sentences[i], Catch::StartsWith("with "));
}

TEST_CASE("an uneven winner's split is named with its slowest and fastest stage",
          "[planner][explain]") {
  const Model m = load_model("llama3-405b");  // 126 layers
  const Cluster c = load_cluster("dgx-h100", 1024);
  Training t;
  t.global_batch = 2048;
  t.seq_len = 8192;
  const SearchResult r = plan_search(
      m, c, t, parse_layout_string("tp=8,pp=16,cp=1,vpp=1,sp=1,zero=1,mbs=1,recompute=full"), {});
  REQUIRE_FALSE(r.top.empty());
  const Layout& best = r.top.front().layout;
  REQUIRE_FALSE(best.stages.empty());  // 16 does not divide 126
  const std::vector<std::string> sentences = explain_ranking(r, 0);
  REQUIRE(sentences.size() == 2);
  const Estimate& e = r.top.front().estimate;
  CHECK_THAT(sentences[1], Catch::StartsWith("Its layers split " + split_string(best.stages)));
  CHECK_THAT(sentences[1], Catch::Contains(fmt::format("stage {} (", e.slowest_stage)) &&
                               Catch::Contains(format_seconds(
                                   e.stage_microbatch_s[static_cast<size_t>(e.slowest_stage)])));
}
