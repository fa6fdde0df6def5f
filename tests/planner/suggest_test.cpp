#include "planner/suggest.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "planner/report.h"
#include "tests/planner/planner_case.h"

using namespace shardplan;

namespace {

std::string thrown_reason(const PlannerCase& c) {
  try {
    require_valid(c.search(), c.model, c.cluster, c.training, c.fixed, {});
  } catch (const InputError& e) {
    return e.reason;
  }
  return "";
}

}  // namespace

TEST_CASE("clear errors for impossible requests", "[planner][suggest]") {
  // 12 sequences cannot be cut over dp=8.
  const std::string batch = thrown_reason(planner_case("gpt-tiny", 1, 12, 64, "dp=8"));
  CHECK_THAT(batch,
             Catch::Contains("layout.global_batch") && Catch::Contains("12 is not divisible"));
  // gpt-tiny uses at most tp=4 (heads) × pp=4 (layers) × cp=8 (2·cp divides 16 tokens) × dp=4
  // (sequences) = 512 devices: 64 nodes, not 1024.
  const std::string devices = thrown_reason(planner_case("gpt-tiny", 1024, 4, 16, ""));
  CHECK_THAT(devices, Catch::Contains("no valid layout of gpt-tiny on 8192 devices"));
  CHECK_THAT(devices, Catch::Contains("with 64 nodes (512 devices) there are valid layouts"));
  CHECK(thrown_reason(planner_case("gpt-tiny", 1, 16, 64, "")).empty());
}

TEST_CASE("when nothing fits anywhere, the fewest doubled nodes that fit", "[planner][suggest]") {
  const PlannerCase c = planner_case("llama3-405b", 1, 16, 4096, "");
  REQUIRE(c.search().fitting == 0);
  const std::vector<Suggestion> s = suggest_changes(c.model, c.cluster, c.training, c.fixed, {});
  REQUIRE(s.size() == 1);
  REQUIRE_THAT(s[0].change, Catch::StartsWith("--nodes "));
  const int nodes = std::stoi(s[0].change.substr(8));
  CHECK(s[0].fitting > 0);
  CHECK(s[0].best.estimate.fits);
  // Half as many nodes still fit nothing.
  const PlannerCase half = planner_case("llama3-405b", nodes / 2, 16, 4096, "");
  CHECK(half.search().fitting == 0);
}

TEST_CASE("when the pins leave nothing that fits, which pins to change", "[planner][suggest]") {
  const PlannerCase c =
      planner_case("llama3-8b", 1, 16, 8192, "tp=1,pp=1,cp=1,zero=1,recompute=none,mbs=2");
  REQUIRE(c.search().fitting == 0);
  const std::vector<Suggestion> s = suggest_changes(c.model, c.cluster, c.training, c.fixed, {});
  REQUIRE_FALSE(s.empty());
  bool recompute = false;
  for (const Suggestion& x : s) {
    INFO(x.change);
    CHECK(x.fitting > 0);
    CHECK(x.best.estimate.fits);
    if (x.change.starts_with("recompute=full")) {
      recompute = true;
      // Only the recompute pin changed.
      CHECK(x.best.layout.recompute == Recompute::full);
      CHECK((x.best.layout.tp == 1 && x.best.layout.pp == 1 && x.best.layout.cp == 1));
      CHECK((x.best.layout.zero == 1 && x.best.layout.micro_batch == 2));
    }
    CHECK_THAT(x.change, !Catch::EndsWith("and no --fix"));  // pins alone helped
  }
  CHECK(recompute);
}
