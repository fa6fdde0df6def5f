// Uneven pipeline stages: the balanced default, the planner's candidates, Megatron-LM's ways of
// giving a split, and the split as the compact string, the layout JSON and resolve_layout take it.
#include "core/stage_split.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "core/param_shard.h"
#include "core/presets.h"
#include "core/schedule.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/thrown_input_error.h"
#include "tests/core/ultrascale_1b.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;
using testing::thrown_input_error;

int sum(const std::vector<int>& v) {
  return std::accumulate(v.begin(), v.end(), 0);
}

std::vector<int> repeated(int n, int value) {
  return std::vector<int>(static_cast<size_t>(n), value);
}

// Llama 3 405B: 126 layers, the first and last of 16 stages a layer short (Llama 3 paper §3.3.2).
std::vector<int> llama3_405b_pp16() {
  std::vector<int> s = repeated(16, 8);
  s.front() = s.back() = 7;
  return s;
}

Layout resolve(std::string_view layout, const Model& m, const Cluster& c, Training t) {
  return resolve_layout(parse_layout_string(layout), m, c, t, "--layout");
}

TEST_CASE("balanced split: even when it divides, the ends a layer short when not", "[stages]") {
  CHECK(balanced_split(80, 4) == repeated(4, 20));
  CHECK(balanced_split(126, 16) == llama3_405b_pp16());
  // One layer short: the last stage, which holds the head and the loss.
  CHECK(balanced_split(31, 4) == std::vector<int>{8, 8, 8, 7});
  CHECK(balanced_split(28, 8) == std::vector<int>{3, 3, 4, 4, 4, 4, 3, 3});
  for (int layers : {3, 7, 28, 61, 126})
    for (int chunks = 1; chunks <= layers; ++chunks) {
      const std::vector<int> s = balanced_split(layers, chunks);
      INFO(layers << " over " << chunks);
      REQUIRE(std::ssize(s) == chunks);
      CHECK(sum(s) == layers);
      const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
      CHECK(*hi - *lo <= 1);
      CHECK(s.back() == *lo);  // the head's stage is never the heavier
    }
  CHECK(balanced_split(3, 5) == std::vector<int>{0, 1, 1, 1, 0});  // the ends alone
  CHECK(balanced_split(3, 6).empty());  // a middle stage would hold nothing
}

TEST_CASE("balanced split: the embedding and the loss counted as layers", "[stages]") {
  // Megatron-LM's --account-for-embedding/loss-in-pipeline-split on 126 layers: 128 over 16.
  CHECK(balanced_split(126, 16, 1, 1) == llama3_405b_pp16());
  for (int extra : {1, 2, 3}) {
    const std::vector<int> s = balanced_split(32, 4, 0, extra);
    INFO("loss counted as " << extra);
    CHECK(sum(s) == 32);
    // The loads (layers plus what is counted) differ by at most one.
    std::vector<int> load = s;
    load.back() += extra;
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    CHECK(*hi - *lo <= 1);
    CHECK(s.back() < 8);
  }
}

// The rule as its header states it, one layer at a time: the least loaded chunk, among equals the
// farthest from the ends, then the earlier.
std::vector<int> one_layer_at_a_time(int layers, int chunks, int first_extra, int last_extra) {
  const auto n = static_cast<size_t>(chunks);
  std::vector<int> load(n, 0), stages(n, 0);
  load.front() += first_extra;
  load.back() += last_extra;
  const auto from_ends = [&](size_t i) { return std::min(i, n - 1 - i); };
  for (int layer = 0; layer < layers; ++layer) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
      if (load[i] < load[best] || (load[i] == load[best] && from_ends(i) > from_ends(best)))
        best = i;
    ++load[best];
    ++stages[best];
  }
  for (size_t i = 1; i + 1 < n; ++i)
    if (stages[i] == 0) return {};
  return stages;
}

TEST_CASE("balanced split: whole levels at once give what one layer at a time gives", "[stages]") {
  for (int layers : {1, 2, 5, 31, 126, 1000})
    for (int chunks : {1, 2, 3, 7, 16, 64, 200})
      for (const auto& [first, last] : {std::pair{0, 0}, {0, 1}, {1, 1}, {0, 3}, {2, 0}}) {
        INFO(layers << " over " << chunks << ", extras " << first << " and " << last);
        CHECK(balanced_split(layers, chunks, first, last) ==
              one_layer_at_a_time(layers, chunks, first, last));
      }
}

TEST_CASE("candidate splits: the balanced one first, each once, all valid", "[stages]") {
  const Model l70 = load_model("llama3-70b");  // 80 layers
  const std::vector<std::vector<int>> even = candidate_splits(l70, 4);
  REQUIRE(even.size() >= 2);
  CHECK(even.front().empty());  // the even split, in its canonical form
  CHECK(std::find(even.begin(), even.end(), std::vector<int>{20, 21, 20, 19}) != even.end());
  const Model l405 = load_model("llama3-405b");
  const std::vector<std::vector<int>> uneven = candidate_splits(l405, 16);
  CHECK(uneven.front() == llama3_405b_pp16());
  for (const auto& [m, splits] : {std::pair{l70, even}, std::pair{l405, uneven}})
    for (const std::vector<int>& s : splits) {
      CHECK(std::count(splits.begin(), splits.end(), s) == 1);
      if (!s.empty()) CHECK(sum(s) == m.num_layers);
    }
  CHECK(candidate_splits(l70, 1) == std::vector<std::vector<int>>{{}});
}

TEST_CASE("head_layers: the head's weights over a layer's, 1 to 3", "[stages]") {
  Model m = load_model("llama3-8b");  // h·V = 4096 × 128256 against 218 M weights a layer
  CHECK(head_layers(m) == 2);
  m.vocab *= 4;
  CHECK(head_layers(m) == 3);
  CHECK(head_layers(load_model("llama3-405b")) == 1);
}

TEST_CASE("check_split: count, sum and empty middle stages are errors naming layout.stages",
          "[stages]") {
  const Model m = load_model("llama3-405b");
  Layout l;
  l.pp = 16;
  const auto reason = [&](std::vector<int> s) {
    const InputError e = thrown_input_error([&] { check_split(s, m, l, "plan.json"); });
    CHECK(e.file == "plan.json");
    CHECK(e.field == "layout.stages");
    return e.reason;
  };
  CHECK_THAT(reason(repeated(8, 16)), Contains("8 entries") && Contains("16 × 1 = 16"));
  CHECK_THAT(reason(repeated(16, 8)), Contains("sums to 128, not num_hidden_layers=126"));
  std::vector<int> hole = llama3_405b_pp16();
  hole[3] = 0;
  hole[4] = 16;
  CHECK_THAT(reason(hole), Contains("virtual stage 3 holds 0 layers"));
  std::vector<int> ends = llama3_405b_pp16();
  ends.front() = 0;
  ends[1] = 15;
  check_split(ends, m, l, "plan.json");  // the embedding alone, as Megatron-LM allows
  check_split(llama3_405b_pp16(), m, l, "plan.json");
}

TEST_CASE("compact string: stages= takes the items without a key that follow it", "[stages]") {
  const LayoutSpec s = parse_layout_string("tp=8,stages=7,8, 8 ,7,pp=4");
  CHECK(s.stages == std::vector<int>{7, 8, 8, 7});
  CHECK(s.pp == 4);
  CHECK(parse_layout_string("stages=5").stages == std::vector<int>{5});
  CHECK(parse_layout_string("stages=7,8*14,7").stages == llama3_405b_pp16());
  CHECK(split_string({1, 2, 2, 3, 3, 3, 0}) == "1,2,2,3*3,0");
  CHECK(parse_layout_string("stages=" + split_string({1, 2, 2, 3, 3, 3, 0})).stages ==
        std::vector<int>{1, 2, 2, 3, 3, 3, 0});
  CHECK(thrown_input_error([] { parse_layout_string("stages=8*0"); }).field == "layout.stages");
  const InputError bad = thrown_input_error([] { parse_layout_string("stages=7,x,8"); });
  CHECK(bad.field == "layout.stages");
  CHECK_THAT(bad.reason, Contains("\"x\""));
  CHECK(thrown_input_error([] { parse_layout_string("stages=7,stages=8"); }).reason ==
        "given more than once");
}

TEST_CASE("resolve: the balanced split by default, a given one checked, even ones canonical",
          "[stages]") {
  const Model m = load_model("llama3-405b");
  const Training t = test::training(2048, 8192);
  const Cluster c = test::dgx_h100(1024);
  const Layout pp16 = resolve("tp=8,pp=16", m, c, t);
  CHECK(pp16.stages == llama3_405b_pp16());
  const Layout pp8 = resolve("tp=8,pp=8", m, c, t);
  CHECK(pp8.stages == std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15});
  CHECK(resolve(to_string(pp16), m, c, t) == pp16);
  CHECK_THAT(to_string(pp16), Contains(",stages=7,8*14,7"));

  const Model l70 = load_model("llama3-70b");  // 80 layers
  const Layout even = resolve("tp=8,pp=4", l70, test::dgx_h100(128), t);
  CHECK(even.stages.empty());
  CHECK(resolve("tp=8,pp=4,stages=20,20,20,20", l70, test::dgx_h100(128), t) == even);
  CHECK(to_string(even).find("stages") == std::string::npos);
  const Layout given = resolve("tp=8,pp=4,stages=19,21,21,19", l70, test::dgx_h100(128), t);
  CHECK(given.stages == std::vector<int>{19, 21, 21, 19});
  const InputError wrong = thrown_input_error(
      [&] { resolve("tp=8,pp=4,stages=20,20,20", l70, test::dgx_h100(128), t); });
  CHECK(wrong.file == "--layout");
  CHECK(wrong.field == "layout.stages");
  // More virtual stages than layers: no split, the old rule with its numbers.
  const InputError many = thrown_input_error(
      [&] { resolve("tp=8,pp=16,vpp=6", l70, test::dgx_h100(256), test::training(4096, 8192)); });
  CHECK(many.field == "layout.vpp");
  CHECK_THAT(many.reason, Contains("16 × 6 = 96 does not divide num_hidden_layers=80"));
}

TEST_CASE("stages follow the split: layer ranges, a rank's chunks and its parameters", "[stages]") {
  const Model m = load_model("llama3-405b");
  const Cluster c = test::dgx_h100(1024);
  const Training t = test::training(2048, 8192);
  for (const char* s : {"tp=8,pp=16", "tp=8,pp=8", "tp=8,pp=8,vpp=3", "tp=8,pp=4,vpp=5"}) {
    const Layout l = resolve(s, m, c, t);
    INFO(to_string(l));
    const std::vector<int> split = stage_split(m, l);
    int next = 0, layers = 0;
    for (int vs = 0; vs < l.pp * l.vpp; ++vs) {
      const LayerRange r = virtual_stage_layers(m, l, vs);
      CHECK(r.begin == next);
      CHECK(r.end - r.begin == split[static_cast<size_t>(vs)]);
      next = r.end;
    }
    CHECK(next == m.num_layers);
    const std::vector<StageLayers> every = every_stage_layers(m, l);
    REQUIRE(std::ssize(every) == l.pp);
    for (int stage = 0; stage < l.pp; ++stage) {
      int held = 0;
      for (int chunk = 0; chunk < l.vpp; ++chunk)
        held += split[static_cast<size_t>(virtual_stage(l, stage, chunk))];
      const StageLayers one = stage_layers(m, l, stage);
      CHECK(one.layers() == held);
      const StageLayers& walked = every[static_cast<size_t>(stage)];
      CHECK(std::tie(walked.stage, walked.dense_layers, walked.moe_layers, walked.first,
                     walked.last) ==
            std::tie(one.stage, one.dense_layers, one.moe_layers, one.first, one.last));
      layers += held;
    }
    CHECK(layers == m.num_layers);
  }
}

TEST_CASE("nanotron's cost-balanced split: the head's cost moves layers to the first ranks",
          "[stages]") {
  const Model m = test::ultrascale_1b();
  // 20 layers' worth over 8 ranks is 2.5 a rank. Rank r takes layers until its running cost
  // passes (r + 1) × 2.5 layers, the layer that passes included: 3 (3 > 2.5), 3 (6 > 5), 2
  // (8 > 7.5), ...; the head and the loss are left to the last two ranks, which hold no layer.
  CHECK(cost_balanced_split(m, 8) == std::vector<int>{3, 3, 2, 3, 2, 3, 0, 0});
  // Over 2 ranks the threshold is 10 layers: the first takes 11, the second 5 and the head.
  CHECK(cost_balanced_split(m, 2) == std::vector<int>{11, 5});
  CHECK(cost_balanced_split(m, 1) == std::vector<int>{16});
  for (int pp : {2, 4, 8, 16, 32}) CHECK(sum(cost_balanced_split(m, pp)) == 16);
}

TEST_CASE(
    "a framework that splits the layers itself: its split replaces the layout's, and "
    "validation holds a layout to it",
    "[stages]") {
  const Model m = test::ultrascale_1b();
  const Cluster c = test::dgx_h100(1);
  Training t = test::training(64, 4096);
  const Layout given = resolve("tp=1,pp=8,stages=2*8", m, c, t);
  t.layer_split = LayerSplit::cost_balanced;
  const Layout run = split_as_run(given, m, t);
  CHECK(run.stages == std::vector<int>{3, 3, 2, 3, 2, 3, 0, 0});
  CHECK_NOTHROW(validate_layout(run, m, c, t, "--layout"));  // empty ranks after the layers
  const InputError other = thrown_input_error([&] { validate_layout(given, m, c, t, "x.json"); });
  CHECK(other.file == "x.json");
  CHECK(other.field == "layout.stages");
  CHECK_THAT(other.reason, Contains("stages=3,3,2,3,2,3,0,0"));
  Layout interleaved =
      resolve("tp=1,pp=4,vpp=2,schedule=interleaved", m, c, test::training(64, 4096));
  CHECK(split_as_run(interleaved, m, t) == interleaved);
  CHECK(thrown_input_error([&] { validate_layout(interleaved, m, c, t, "x.json"); }).field ==
        "layout.vpp");
}

TEST_CASE("Megatron-LM flags: first and last pipeline ranks, the embedding and loss counted",
          "[stages]") {
  const Model m = load_model("llama3-405b");
  CHECK(parse_megatron_flags({"--pp", "16", "--decoder-first-pipeline-num-layers", "7",
                              "--decoder-last-pipeline-num-layers=7"},
                             m)
            .stages == llama3_405b_pp16());
  CHECK(parse_megatron_flags({"--pp", "16", "--account-for-embedding-in-pipeline-split",
                              "--account-for-loss-in-pipeline-split"},
                             m)
            .stages == llama3_405b_pp16());
  // Only the last given: the other 120 over 15 ranks; with vpp each rank's over its chunks.
  const LayoutSpec last = parse_megatron_flags({"--pp", "16", "--decoder-last-pipeline-num-layers",
                                                "6", "--num-virtual-stages-per-pipeline-rank", "2"},
                                               m);
  REQUIRE(last.stages);
  CHECK(last.stages->size() == 32);
  CHECK(last.stages->front() == 4);
  CHECK(last.stages->back() == 3);
  CHECK(sum(*last.stages) == 126);

  const InputError uneven = thrown_input_error([&] {
    parse_megatron_flags({"--pp", "16", "--decoder-first-pipeline-num-layers", "5"}, m);
  });
  CHECK(uneven.file == "--decoder-first-pipeline-num-layers");
  CHECK(uneven.field == "layout.stages");
  CHECK_THAT(uneven.reason, Contains("121 layers left do not divide over the other 15"));
  CHECK_THAT(thrown_input_error([&] {
               parse_megatron_flags({"--pp", "16", "--account-for-loss-in-pipeline-split"}, m);
             }).reason,
             Contains("127 does not divide over pp × vpp = 16 × 1"));
  CHECK_THAT(thrown_input_error([&] {
               parse_megatron_flags({"--pp", "16", "--account-for-loss-in-pipeline-split",
                                     "--decoder-first-pipeline-num-layers", "7"},
                                    m);
             }).reason,
             Contains("takes no other uneven-pipeline flag"));
}

TEST_CASE("Megatron-Core's pipeline layout string: written and read back", "[stages]") {
  const std::vector<int> split{0, 3, 4, 2};
  const std::string s = megatron_layout_string(split);
  CHECK(s == "E|t*3|t*4|t*2,L");
  std::string why;
  CHECK(megatron_layout_string(llama3_405b_pp16()) == "Et*7|(t*8|)*14,t*7,L");
  CHECK(parse_megatron_layout_string(megatron_layout_string(llama3_405b_pp16()), why) ==
        llama3_405b_pp16());
  CHECK(parse_megatron_layout_string(s, why) == split);
  CHECK(parse_megatron_layout_string("'Et*3|(tt|)*2,t|L'", why) == std::vector<int>{3, 2, 2, 1, 0});
  CHECK(why.empty());
  CHECK(parse_megatron_layout_string("t*3|E|L", why).empty());
  CHECK_THAT(why, Contains("\"E\" must come first"));
  why.clear();
  CHECK(parse_megatron_layout_string("Et|m|L", why).empty());
  CHECK_THAT(why, Contains("\"m\" is not modelled"));

  const Model m = load_model("llama3-405b");
  const LayoutSpec spec = parse_megatron_flags(
      {"--pp", "8", "--pipeline-model-parallel-layout", megatron_layout_string(llama3_405b_pp16())},
      m);
  CHECK(spec.vpp == 2);
  CHECK(spec.stages == llama3_405b_pp16());
}

// Found by tests/fuzz (fuzz_megatron_flags): counts multiplied through nested parentheses, and
// "E(t*999999)*9999L" asked for 10^10 characters (out of memory; bad_alloc, exit 2, in the CLI).
TEST_CASE("Megatron-Core's pipeline layout string: unrolling and nesting are bounded", "[stages]") {
  std::string why;
  CHECK(parse_megatron_layout_string("E(t*999999)*9999L", why).empty());
  CHECK_THAT(why, Contains("unrolls to more than 1048576 entries"));
  why.clear();
  CHECK(parse_megatron_layout_string("E(((t*1000)*1000)*1000)*1000L", why).empty());
  CHECK_THAT(why, Contains("unrolls to more than"));
  why.clear();
  CHECK(parse_megatron_layout_string(
            "E" + std::string(100, '(') + "t" + std::string(100, ')') + "L", why)
            .empty());
  CHECK_THAT(why, Contains("nested deeper than 64 levels"));
  why.clear();
  CHECK(parse_megatron_layout_string("E" + std::string(64, '(') + "t" + std::string(64, ')') + "L",
                                     why) == std::vector<int>{1});
  CHECK(why.empty());
}

TEST_CASE("layout JSON: stages written when uneven, read and checked", "[stages]") {
  Layout l;
  l.pp = 16;
  l.stages = llama3_405b_pp16();
  const nlohmann::json j = layout_to_json(l);
  CHECK(j["stages"] == llama3_405b_pp16());
  CHECK(layout_from_json(j, "plan.json") == l);
  CHECK_FALSE(layout_to_json(Layout{}).contains("stages"));
  nlohmann::json bad = j;
  bad["stages"] = {7, "eight"};
  const InputError e = thrown_input_error([&] { layout_from_json(bad, "plan.json"); });
  CHECK(e.file == "plan.json");
  CHECK(e.field == "layout.stages");
  bad["stages"] = nlohmann::json::array();
  CHECK(thrown_input_error([&] { layout_from_json(bad, "plan.json"); }).field == "layout.stages");
}

}  // namespace
}  // namespace shardplan
