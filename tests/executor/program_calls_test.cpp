// The layers' calls of a unit pass checked against its program (executor/program_calls.h): the
// calls a pass makes when they are the program's pass, and an error naming the action and both
// byte counts when one action's bytes were tampered with, one call is missing or one is extra.
#include "executor/program_calls.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "core/schedule.h"
#include "tests/core/schedule_fixtures.h"

namespace shardplan {
namespace {

using Catch::Matchers::Contains;

// The first backward pass of a layer in `p`: actions [first, last).
struct PassRange {
  size_t first = 0, last = 0;
};
PassRange first_layer_backward(const Program& p) {
  const auto in_pass = [&](size_t i, const Action& start) {
    const Action& a = p.actions[i];
    return (a.kind == ActionKind::compute || a.kind == ActionKind::collective) &&
           a.pass == start.pass && a.micro_batch == start.micro_batch &&
           a.layer_begin == start.layer_begin && a.layer_end == start.layer_end;
  };
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const Action& a = p.actions[i];
    if (a.pass != Pass::backward || a.layer_end == a.layer_begin) continue;
    size_t j = i;
    while (j < p.actions.size() && in_pass(j, a)) ++j;
    return {i, j};
  }
  FAIL("no layer backward");
  return {};
}

// The calls a pass makes when the layers do what its program says.
std::vector<TimedCall> calls_of(const Program& p, PassRange r) {
  std::vector<TimedCall> calls;
  for (size_t i = r.first; i < r.last; ++i)
    if (p.actions[i].kind == ActionKind::collective)
      calls.push_back({p.actions[i].op, p.actions[i].group, p.actions[i].bytes, {}, {}});
  return calls;
}

TEST_CASE("program calls: a pass's calls are its collective actions, bytes and all",
          "[program_calls]") {
  // tp2 with sequence parallelism and cp2: a layer's backward has two tp all-gathers (output
  // gradient and saved input), the cp all-gather and reduce-scatter, and two tp reduce-scatters.
  Layout l = test::layout(1, 2, 1, 1);
  l.cp = 2;
  l.sequence_parallel = true;
  Program p = build_program(test::small_gpt(), test::small_training(), l, 0);
  const PassRange r = first_layer_backward(p);
  std::vector<TimedCall> calls = calls_of(p, r);
  REQUIRE(calls.size() == 6);
  CHECK_NOTHROW(check_pass_calls(p, r.first, r.last, calls));

  SECTION("an action's bytes tampered with") {
    size_t gather = r.first;
    while (p.actions[gather].kind != ActionKind::collective) ++gather;
    const int64_t program_bytes = p.actions[gather].bytes;
    p.actions[gather].bytes = program_bytes / 2;
    CHECK_THROWS_AS(check_pass_calls(p, r.first, r.last, calls), std::logic_error);
    CHECK_THROWS_WITH(
        check_pass_calls(p, r.first, r.last, calls),
        Contains("(tp all_gather mb0 c0) moves " + std::to_string(program_bytes / 2) +
                 " bytes, the layers' tp all_gather moved " + std::to_string(program_bytes)));
  }
  SECTION("a call missing") {
    calls.pop_back();
    CHECK_THROWS_WITH(
        check_pass_calls(p, r.first, r.last, calls),
        Contains("(tp reduce_scatter mb0 c0) moves") && Contains("the layers moved 0"));
  }
  SECTION("a call without an action") {
    calls.push_back({Collective::all_reduce, Group::tp, 64, {}, {}});
    CHECK_THROWS_WITH(
        check_pass_calls(p, r.first, r.last, calls),
        Contains("the layers' tp all_reduce of 64 bytes") && Contains("has no action"));
  }
  SECTION("a call of another op in an action's place") {
    calls.front().op = Collective::all_reduce;
    CHECK_THROWS_WITH(check_pass_calls(p, r.first, r.last, calls),
                      Contains("the layers' tp all_reduce moved"));
  }
}

TEST_CASE("program calls: a pipeline message of other bytes than its action's is an error",
          "[program_calls]") {
  const Program p =
      build_program(test::small_gpt(), test::small_training(), test::layout(1, 1, 2, 1), 0);
  size_t send = 0;
  while (p.actions[send].kind != ActionKind::send) ++send;
  CHECK_NOTHROW(check_message(p, send, p.actions[send].bytes));
  CHECK_THROWS_WITH(
      check_message(p, send, p.actions[send].bytes + 2),
      Contains("(send activation mb0 c0) moves " + std::to_string(p.actions[send].bytes) +
               " bytes, the message is " + std::to_string(p.actions[send].bytes + 2)));
}

}  // namespace
}  // namespace shardplan
