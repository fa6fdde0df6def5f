#include "planner/enumerate.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "core/error.h"
#include "core/stage_split.h"
#include "tests/core/thrown_input_error.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

namespace {

bool any_rejection(const Candidates& c, const std::string& field) {
  return std::any_of(c.rejections.begin(), c.rejections.end(),
                     [&](const Rejection& r) { return r.field == field; });
}

}  // namespace

TEST_CASE("divisors are every positive divisor, increasing", "[planner][enumerate]") {
  CHECK(divisors(1) == std::vector<int>{1});
  CHECK(divisors(12) == std::vector<int>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(16) == std::vector<int>{1, 2, 4, 8, 16});
  CHECK(divisors(126) == std::vector<int>{1, 2, 3, 6, 7, 9, 14, 18, 21, 42, 63, 126});
}

TEST_CASE("every layout of gpt-tiny on one 8-GPU node, each once and each valid",
          "[planner][enumerate]") {
  const PlannerCase c = planner_case("gpt-tiny", 1, 16, 64);  // 4 layers, 4 heads, 4 kv heads
  const Candidates cand = c.enumerate();

  // tp·cp·pp divides 8: 10 shapes with tp=1, 6 with tp=2, 3 with tp=4, 1 with tp=8.
  CHECK(cand.shapes == 20);
  // Rejected whole: tp=8 (does not divide 4 heads) and pp=8 (does not divide 4 layers).
  CHECK(cand.shapes_invalid == 2);
  CHECK(any_rejection(cand, "layout.tp"));
  CHECK(any_rejection(cand, "layout.pp"));
  // Rejected one by one: the interleaved schedule (pp=2, vpp=2) with one micro-batch, which is
  // not a multiple of pp. One micro-batch size per shape (16/dp) gives it; over the 6 pp=2 shapes
  // (tp, cp) = (1,1) (1,2) (1,4): 4 ZeRO stages × 3 recomputes; (2,1) (2,2): × 2 for sp; (4,1):
  // dp·cp = 1, ZeRO 0 only, 3 recomputes × 2 sp. 12 + 12 + 12 + 24 + 24 + 6 = 90, each under the
  // three splits of the 4 layers over 4 virtual stages (core/stage_split.h's candidate_splits:
  // even, the loss counted as a layer, the embedding and the loss counted).
  CHECK(candidate_splits(c.model, 4).size() == 3);
  CHECK(cand.layouts_invalid == 90 * 3);
  for (const Rejection& r : cand.rejections) {
    if (r.whole_shape) {
      CHECK((r.layout.tp == 8 || r.layout.pp == 8));
    } else {
      CHECK(r.field == "layout.num_microbatches");
      CHECK((r.layout.schedule == Schedule::interleaved && r.layout.num_microbatches == 1));
    }
  }

  std::set<std::string> seen;
  for (const Layout& l : cand.layouts) {
    CHECK(l.world() == 8);
    CHECK(l.global_batch() == 16);
    CHECK_NOTHROW(validate_layout(l, c.model, c.cluster, c.training, "test"));
    if (l.tp == 1) CHECK_FALSE(l.sequence_parallel);
    if (l.pp == 1) CHECK((l.vpp == 1 && l.schedule == Schedule::one_f_one_b));
    CHECK((l.schedule == Schedule::interleaved || l.schedule == Schedule::zb_v) == (l.vpp > 1));
    CHECK(seen.insert(to_string(l)).second);
  }
  // Plain data parallelism is among them, with every ZeRO stage and micro-batch size.
  const auto plain_dp =
      std::count_if(cand.layouts.begin(), cand.layouts.end(),
                    [](const Layout& l) { return l.dp == 8 && l.recompute == Recompute::none; });
  CHECK(plain_dp == 4 * 2);  // zero 0..3 × micro-batch 1, 2 (16 sequences over 8 ranks)
}

TEST_CASE("fields pinned by --fix stay, the rest still vary", "[planner][enumerate]") {
  const Candidates cand = planner_case("gpt-tiny", 1, 16, 64, "tp=2,recompute=full").enumerate();
  REQUIRE_FALSE(cand.layouts.empty());
  std::set<int> pps;
  for (const Layout& l : cand.layouts) {
    CHECK(l.tp == 2);
    CHECK(l.recompute == Recompute::full);
    pps.insert(l.pp);
  }
  CHECK(pps == std::set<int>{1, 2, 4});

  // A fixed dp leaves pp to fill the world.
  const Candidates dp2 = planner_case("gpt-tiny", 1, 16, 64, "dp=2").enumerate();
  REQUIRE_FALSE(dp2.layouts.empty());
  for (const Layout& l : dp2.layouts) CHECK(l.tp * l.cp * l.pp == 4);
}

TEST_CASE("count_layouts counts what the search visits, and --max-layouts refuses past it",
          "[planner][enumerate]") {
  // Every shape valid (tp=2 leaves pp 1, 2 or 4 of 8): each layout visited is kept or rejected.
  const PlannerCase c = planner_case("gpt-tiny", 1, 16, 64, "tp=2");
  const Candidates cand = c.enumerate();
  REQUIRE(cand.shapes_invalid == 0);
  const int64_t visited = count_layouts(c.model, c.cluster, c.training, c.fixed);
  CHECK(visited == std::ssize(cand.layouts) + cand.layouts_invalid);

  SearchOptions o;
  o.max_layouts = visited;
  CHECK_FALSE(c.search(o).top.empty());
  o.max_layouts = visited - 1;
  const InputError e = testing::thrown_input_error([&] { c.search(o); });
  CHECK(e.file == "--max-layouts");
  CHECK_THAT(e.reason, Catch::Matchers::Contains(std::to_string(visited) + " layouts"));
}

TEST_CASE("a fixed split stays, in canonical form, a wrong one is refused naming layout.stages",
          "[planner][enumerate]") {
  const Candidates uneven = planner_case("gpt-tiny", 1, 16, 64, "pp=2,stages=1,3").enumerate();
  REQUIRE_FALSE(uneven.layouts.empty());
  for (const Layout& l : uneven.layouts) CHECK(l.stages == std::vector<int>{1, 3});
  const Candidates even = planner_case("gpt-tiny", 1, 16, 64, "pp=2,stages=2,2").enumerate();
  REQUIRE_FALSE(even.layouts.empty());
  for (const Layout& l : even.layouts) CHECK(l.stages.empty());
  const Candidates wrong = planner_case("gpt-tiny", 1, 16, 64, "pp=2,stages=5*2").enumerate();
  CHECK(wrong.layouts.empty());
  REQUIRE_FALSE(wrong.rejections.empty());
  CHECK(wrong.rejections.front().field == "layout.stages");
  CHECK_THAT(wrong.rejections.front().reason, Catch::Contains("sums to 10"));
}

TEST_CASE("a framework that splits the layers itself: only its split, no virtual stages",
          "[planner][enumerate]") {
  PlannerCase c = planner_case("llama3-8b", 2, 64, 2048);
  c.training.layer_split = LayerSplit::cost_balanced;
  const Candidates found = c.enumerate();
  REQUIRE_FALSE(found.layouts.empty());
  std::set<int> pps;
  for (const Layout& l : found.layouts) {
    CHECK(l.vpp == 1);
    CHECK(l.stages == canonical_split(cost_balanced_split(c.model, l.pp)));
    pps.insert(l.pp);
  }
  CHECK(pps.size() > 2);  // pipelines of several depths, each with the framework's split
}

TEST_CASE("an impossible --fix is rejected with the rule it breaks", "[planner][enumerate]") {
  const Candidates tp3 = planner_case("gpt-tiny", 1, 16, 64, "tp=3").enumerate();
  CHECK(tp3.layouts.empty());
  REQUIRE(tp3.rejections.size() == 1);
  CHECK(tp3.rejections[0].whole_shape);

  // 16 sequences cannot be split over dp=8 in micro-batches of 4.
  const Candidates mbs4 = planner_case("gpt-tiny", 1, 16, 64, "dp=8,mbs=4").enumerate();
  CHECK(mbs4.layouts.empty());
  CHECK(mbs4.shapes_invalid == 1);
}

TEST_CASE("expert parallelism divides the experts and dp", "[planner][enumerate]") {
  const PlannerCase c =
      planner_case("mixtral-8x7b", 4, 64, 4096, "tp=2,pp=4,recompute=full,zero=1");
  std::set<int> eps;
  for (const Layout& l : c.enumerate().layouts) {
    CHECK(c.model.moe.num_experts % l.ep == 0);
    CHECK(l.dp % l.ep == 0);
    eps.insert(l.ep);
  }
  CHECK(eps == std::set<int>{1, 2, 4});  // cp·dp = 4, so ep = 8 never divides dp
}

TEST_CASE("shapes split over threads give the candidates of one thread, in the same order",
          "[planner][enumerate]") {
  for (const PlannerCase& c : {planner_case("mixtral-8x7b", 2, 128, 4096),
                               planner_case("llama3-70b", 4, 64, 4096, "tp=8")}) {
    const Candidates one = c.enumerate();
    for (int threads : {2, 3}) {
      const Candidates split =
          enumerate_layouts(c.model, c.cluster, c.training, c.fixed, std::nullopt, threads);
      CHECK(split.layouts == one.layouts);
      CHECK(split.shapes == one.shapes);
      CHECK(split.shapes_invalid == one.shapes_invalid);
      CHECK(split.layouts_invalid == one.layouts_invalid);
      REQUIRE(split.rejections.size() == one.rejections.size());
      for (size_t i = 0; i < one.rejections.size(); ++i) {
        CHECK(split.rejections[i].layout == one.rejections[i].layout);
        CHECK(split.rejections[i].reason == one.rejections[i].reason);
      }
    }
  }
}

TEST_CASE("ZB-V's two chunks a rank are searched where the layers do not divide over them",
          "[planner][enumerate]") {
  // 6 layers over pp = 2: three a rank, which interleaving divides into 3 chunks only, ZB-V into
  // its 2 unevenly.
  PlannerCase c = planner_case("gpt-tiny", 1, 16, 64, "pp=2");
  c.model.num_layers = 6;
  const Candidates cand = c.enumerate();
  int v = 0;
  for (const Layout& l : cand.layouts) {
    if (l.vpp == 2) CHECK(l.schedule == Schedule::zb_v);
    if (l.vpp == 3) CHECK(l.schedule == Schedule::interleaved);
    v += l.schedule == Schedule::zb_v ? 1 : 0;
  }
  CHECK(v > 0);
}
