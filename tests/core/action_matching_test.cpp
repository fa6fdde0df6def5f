// Group actions matched across ranks as Program's contract orders them, and each rank's wait in
// them for its group's last member.
#include "core/action_matching.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <tuple>

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
  const auto wait = partner_wait_s(p, t);
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

TEST_CASE("recv waits: its send's start less its own, where later", "[schedule]") {
  const std::vector<Program> p = programs_of(layout(1, 1, 2, 2));
  // Every action of both ranks starts at its index in ms, rank 1's 5 ms later: some recvs are
  // reached before their sends start, some after.
  std::vector<std::vector<ActionTiming>> t(2);
  for (size_t r = 0; r < 2; ++r)
    for (size_t i = 0; i < p[r].actions.size(); ++i) {
      const double at = 1e-3 * static_cast<double>(i) + (r == 1 ? 5e-3 : 0);
      t[r].push_back({at, at + 1e-4});
    }
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> sent;  // (from, to, tag) → start
  for (size_t r = 0; r < 2; ++r)
    for (size_t i = 0; i < p[r].actions.size(); ++i)
      if (p[r].actions[i].kind == ActionKind::send)
        sent[{p[r].rank, p[r].actions[i].peer, p[r].actions[i].tag}] = t[r][i].start_s;
  const auto wait = partner_wait_s(p, t);
  int recvs = 0, waited = 0;
  for (size_t r = 0; r < 2; ++r)
    for (size_t i = 0; i < p[r].actions.size(); ++i) {
      const Action& a = p[r].actions[i];
      if (a.kind != ActionKind::recv) continue;
      ++recvs;
      const double expected = std::max(0.0, sent.at({a.peer, p[r].rank, a.tag}) - t[r][i].start_s);
      CHECK(wait[r][i] == Approx(expected).margin(1e-12));
      waited += wait[r][i] > 0 ? 1 : 0;
    }
  CHECK(waited > 0);
  CHECK(waited < recvs);
}

}  // namespace shardplan
