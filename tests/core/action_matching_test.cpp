// Group actions matched across ranks as Program's contract orders them, and each rank's wait in
// them for its group's last member.
#include "core/action_matching.h"

#include <catch2/catch.hpp>
#include <optional>
#include <span>

#include "tests/core/schedule_fixtures.h"

namespace shardplan {
namespace {

using test::layout;
using test::small_gpt;
using test::small_training;

std::vector<Program> programs_of(const Layout& l) {
  std::vector<Program> out;
  for (int64_t r = 0; r < l.world(); ++r)
    out.push_back(build_program(small_gpt(), small_training(), l, r));
  return out;
}

}  // namespace

TEST_CASE("collective instances: the k-th group action of every member, over every group",
          "[schedule]") {
  // dp=2 × tp=2: ranks {0,1} and {2,3} are tp groups, {0,2} and {1,3} dp groups.
  const std::vector<Program> p = programs_of(layout(2, 2, 1, 2));
  size_t group_actions = 0;
  for (const Program& q : p)
    for (const Action& a : q.actions) group_actions += is_group_action(a) ? 1 : 0;
  const auto instances = collective_instances(p);
  size_t members = 0;
  for (const std::vector<ActionRef>& inst : instances) {
    REQUIRE(inst.size() == 2);
    members += inst.size();
    const Action& a = p[inst[0].program].actions[inst[0].action];
    const Action& b = p[inst[1].program].actions[inst[1].action];
    CHECK(a.kind == b.kind);
    CHECK(a.op == b.op);
    CHECK(a.group == b.group);
    CHECK(a.bytes == b.bytes);
    CHECK(a.micro_batch == b.micro_batch);
    CHECK(p[inst[0].program].members(a) == p[inst[1].program].members(b));
  }
  CHECK(members == group_actions);  // every group action in exactly one instance

  // Only rank 0's program: its groups have no other member there, so nothing to match.
  CHECK(collective_instances(std::span(p).first(1)).empty());
}

TEST_CASE("group waits: the latest member's arrival less each member's own", "[schedule]") {
  const std::vector<Program> p = programs_of(layout(1, 2, 1, 1));
  // Rank 1 reaches every action 3 ms after rank 0, except the first group action, which rank 0
  // reaches 1 ms after rank 1.
  std::vector<std::vector<ActionTiming>> t(2);
  std::optional<uint32_t> first;
  for (uint32_t i = 0; i < p[0].actions.size(); ++i) {
    const double at = i * 0.1;
    const bool swapped = is_group_action(p[0].actions[i]) && !first;
    if (swapped) first = i;
    t[0].push_back({swapped ? at + 0.001 : at, at + 0.05});
    t[1].push_back({swapped ? at : at + 0.003, at + 0.05});
  }
  REQUIRE(first);
  const auto wait = partner_wait_s(p, match_actions(p), t);
  for (uint32_t i = 0; i < p[0].actions.size(); ++i) {
    INFO(action_name(p[0].actions[i]));
    if (!is_group_action(p[0].actions[i])) {
      CHECK(wait[0][i] == 0);
      CHECK(wait[1][i] == 0);
    } else if (i == *first) {
      CHECK(wait[0][i] == 0);
      CHECK(wait[1][i] == Approx(0.001));
    } else {
      CHECK(wait[0][i] == Approx(0.003));
      CHECK(wait[1][i] == 0);
    }
  }
}

TEST_CASE("recv waits: its send's start less its own, where later, never past its end",
          "[schedule]") {
  // pp=2, 2 micro-batches. Rank 0: send activation mb0 at 9, mb1 at 19; recv gradient mb0 at 20,
  // mb1 at 30; the embedding's all_reduce at 40. Rank 1: recv activation mb0 at 0, send gradient
  // mb0 at 19, recv activation mb1 at 20, send gradient mb1 at 39, the all_reduce at 40.
  const std::vector<Program> p = programs_of(layout(1, 1, 2, 2));
  REQUIRE(p[0].actions[20].kind == ActionKind::recv);
  REQUIRE(p[0].actions[30].kind == ActionKind::recv);
  REQUIRE(p[1].actions[0].kind == ActionKind::recv);
  REQUIRE(p[1].actions[20].kind == ActionKind::recv);
  REQUIRE(is_group_action(p[0].actions[40]));
  // Action i of rank 0 starts at i ms, of rank 1 at i + 5 ms; each lasts 10 ms.
  std::vector<std::vector<ActionTiming>> t(2);
  for (size_t r = 0; r < 2; ++r)
    for (size_t i = 0; i < p[r].actions.size(); ++i) {
      const double at = 1e-3 * (static_cast<double>(i) + (r == 1 ? 5 : 0));
      t[r].push_back({at, at + 10e-3});
    }
  const auto wait = partner_wait_s(p, match_actions(p), t);
  CHECK(wait[1][0] == Approx(4e-3));    // reached at 5, sent at 9
  CHECK(wait[1][20] == 0);              // reached at 25, sent at 19
  CHECK(wait[0][20] == Approx(4e-3));   // reached at 20, sent at 24
  CHECK(wait[0][30] == Approx(10e-3));  // reached at 30, sent at 44: its 10 ms at most
  CHECK(wait[0][40] == Approx(5e-3));   // the all_reduce: rank 1 arrives at 45
  CHECK(wait[1][40] == 0);
  CHECK(wait[0][9] == 0);  // a send waits for nothing

  // With rank 1's program alone, nothing meets: no sends for its recvs, no group.
  const std::span<const Program> alone = std::span(p).subspan(1);
  CHECK(recv_sends(alone).empty());
  CHECK(collective_instances(alone).empty());
  const auto alone_wait = partner_wait_s(alone, match_actions(alone), {t[1]});
  for (const double w : alone_wait[0]) CHECK(w == 0);
}

TEST_CASE("collective instances over some ranks' programs: the groups they fill", "[schedule]") {
  // dp=2 × tp=2 with ranks 0 and 1 only: their tp group is whole, their dp groups ({0,2}, {1,3})
  // have one member each.
  const std::vector<Program> all = programs_of(layout(2, 2, 1, 2));
  const std::span<const Program> some = std::span(all).first(2);
  size_t tp_actions = 0;
  for (const Action& a : some[0].actions)
    tp_actions += is_group_action(a) && a.group == Group::tp ? 1 : 0;
  const auto instances = collective_instances(some);
  CHECK(instances.size() == tp_actions);
  for (const std::vector<ActionRef>& inst : instances) {
    REQUIRE(inst.size() == 2);
    CHECK(some[inst[0].program].actions[inst[0].action].group == Group::tp);
  }
}

}  // namespace shardplan
