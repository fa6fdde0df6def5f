#include "planner/report.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "core/human_format.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("layout labels leave out defaults and read back to the same layout",
          "[planner][report]") {
  PlannerCase c = planner_case("gpt-tiny", 1, 16, 64);
  Layout l{.dp = 2, .tp = 2, .pp = 2, .zero = 1, .micro_batch = 2, .num_microbatches = 4};
  CHECK(layout_label(l) == "tp=2,pp=2,dp=2,zero=1,mbs=2");
  l.sequence_parallel = true;
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  l.recompute = Recompute::selective;
  CHECK(layout_label(l) == "tp=2,pp=2,dp=2,zero=1,mbs=2,sp=1,vpp=2,recompute=selective");
  l.vpp = 1;
  l.schedule = Schedule::gpipe;
  CHECK(layout_label(l) == "tp=2,pp=2,dp=2,zero=1,mbs=2,sp=1,recompute=selective,schedule=gpipe");

  for (const Layout& each : c.enumerate().layouts) {
    INFO(layout_label(each));
    CHECK(resolve_layout(parse_layout_string(layout_label(each)), c.model, c.cluster, c.training,
                         "label") == each);
  }
}

TEST_CASE("counts, the table and every rejection with its reason", "[planner][report]") {
  const PlannerCase c = planner_case("gpt-tiny", 1, 16, 64);
  SearchOptions explain;
  explain.keep_refused = true;
  const SearchResult r = c.search(explain);
  const std::string counts = format_counts(r);
  // 20 shapes, tp=8 and pp=8 invalid; 270 interleaved layouts with one micro-batch, 90 under each
  // of three splits (enumerate_test).
  CHECK_THAT(counts, Catch::StartsWith("20 shapes (tp, cp, pp, dp, ep), 2 of them invalid\n"));
  CHECK_THAT(counts, Catch::Contains(" layouts: 270 invalid, 0 over device memory, "));

  // Header and the top 5, the layouts last, a long one wrapped onto lines of its own.
  const std::vector<std::string> table = lines_of(format_top(r));
  CHECK(std::count_if(table.begin(), table.end(), [](const std::string& line) {
          return !line.starts_with("   ");
        }) == 6);
  // The top row, its label's wrapped lines joined.
  std::string top_row = table[1];
  for (size_t i = 2; i < table.size() && table[i].starts_with("   "); ++i)
    top_row += table[i].substr(table[i].find_first_not_of(' '));
  CHECK_THAT(top_row, Catch::EndsWith("  " + layout_label(r.top[0].layout)));
  CHECK(std::all_of(table.begin(), table.end(),
                    [](const std::string& line) { return line.size() <= kTableColumns; }));
  CHECK_THAT(lines_of(format_top(r, true))[1],
             Catch::StartsWith("  1  " + layout_label(r.top[0].layout) + " "));

  const std::vector<std::string> rejected = lines_of(format_rejections(r));
  CHECK(rejected.size() == 272);
  CHECK(std::count(
            rejected.begin(), rejected.end(),
            "invalid  tp=8,pp=1,dp=1 (every layout of the shape): layout.tp: 8 does not divide "
            "num_attention_heads=4") == 1);
}

TEST_CASE("a layout over memory is listed with the item that overflows", "[planner][report]") {
  SearchOptions explain;
  explain.keep_refused = true;
  const SearchResult r = planner_case("llama3-8b", 1, 32, 4096, "tp=1,pp=1,cp=1").search(explain);
  REQUIRE_FALSE(r.pruned.empty());
  const MemoryMiss& worst = r.pruned.back();
  const std::optional<MemoryOverflow> overflow = first_overflow(worst.memory);
  REQUIRE(overflow);
  const std::vector<std::string> lines = lines_of(format_rejections(r));
  CHECK(lines.back() ==
        "memory   " + layout_label(worst.layout) + ": " + std::string(overflow->item) + " needs " +
            format_gib(static_cast<double>(overflow->needed_bytes)) + ", " +
            format_gib(static_cast<double>(overflow->free_bytes)) + " free (needs " +
            format_gib(static_cast<double>(worst.memory.peak_bytes() +
                                           worst.memory.runtime_reserved_bytes)) +
            " of 80.00 GiB)");
}

TEST_CASE("the chosen plan is a plan file the other subcommands read", "[planner][report]") {
  const PlannerCase c = planner_case("llama3-8b", 1, 32, 4096);
  const SearchResult r = c.search();
  REQUIRE_FALSE(r.top.empty());
  const nlohmann::json j = plan_to_json(chosen_plan(c.model, c.cluster, c.training, r.top.front()));
  const Plan back = plan_from_json(j, "plan.json");
  CHECK(back.layout == r.top.front().layout);
  CHECK(back.model == c.model);
  CHECK(back.training.global_batch == 32);
  CHECK(back.prediction.at("step_time_s").get<double>() == r.top.front().estimate.step_time_s);
  CHECK(back.prediction.at("memory").at("peak_bytes").get<int64_t>() ==
        r.top.front().estimate.memory().peak_bytes());

  const nlohmann::json s = search_to_json(r);
  CHECK(s.at("fitting") == r.fitting);
  CHECK(s.at("top").size() == r.top.size());
  CHECK(s.at("top")[0].at("layout") == layout_label(r.top.front().layout));
}
