// The step simulation: overlap and stalls computed by hand, the activations' timeline, deadlock
// reports, the critical path and the 1,024-rank speed benchmark (the pipeline schedules' bubbles
// are in pipeline_schedule_sim_test.cpp).
#include "simulator/event_simulator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/layout.h"
#include "core/presets.h"
#include "simulator/plan_simulation.h"
#include "simulator/uniform_pricer.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/schedule_fixtures.h"
#include "tests/simulator/small_step.h"

namespace shardplan {
namespace {

using test::layout;
using test::simulate_small;
using test::small_gpt;
using test::small_training;

// Hand-built programs: every action lasts `params` seconds.
struct ParamsPricer : ActionPricer {
  double duration_s(const Program&, const Action& a) const override { return double(a.params); }
  int64_t activation_bytes(const Program&, int) const override { return 0; }
};

Action compute(int64_t seconds) {
  Action a;
  a.pass = Pass::forward;
  a.params = seconds;
  return a;
}

Action p2p(ActionKind kind, int64_t peer, int64_t tag) {
  Action a;
  a.kind = kind;
  a.stream = Stream::pp_comm;
  a.pass = Pass::forward;
  a.peer = peer;
  a.tag = tag;
  return a;
}

Action tp_all_reduce(int64_t seconds) {
  Action a;
  a.kind = ActionKind::collective;
  a.stream = Stream::tp_comm;
  a.op = Collective::all_reduce;
  a.group = Group::tp;
  a.params = seconds;
  return a;
}

// Appends `a`, depending on the action before it when there is one.
void chain(Program& p, Action a) {
  if (!p.actions.empty()) {
    a.deps_begin = static_cast<uint32_t>(p.deps.size());
    a.deps_count = 1;
    p.deps.push_back(static_cast<uint32_t>(p.actions.size() - 1));
  }
  p.actions.push_back(a);
}

StepPrograms two_ranks(std::vector<Action> rank0, std::vector<Action> rank1) {
  StepPrograms s;
  s.world = 2;
  for (int64_t r : {0, 1}) {
    Program p;
    p.rank = r;
    p.groups[static_cast<size_t>(Group::tp)] = {0, 1};
    for (const Action& a : r == 0 ? rank0 : rank1) chain(p, a);
    s.programs.push_back(std::move(p));
  }
  return s;
}

}  // namespace

TEST_CASE("the activations' timeline: one chunk more or less a change, the peak's moment and pass",
          "[event]") {
  UniformPricer pricer;
  pricer.chunk_activation_bytes = 1000;
  for (int pp : {2, 4})
    for (int m : {pp, 3 * pp})
      for (Schedule schedule : {Schedule::one_f_one_b, Schedule::gpipe}) {
        const SimResult r = simulate_small(small_gpt(), layout(1, 1, pp, m, schedule), pricer);
        INFO("pp=" << pp << " m=" << m << " " << enum_name(schedule, kScheduleNames));
        for (int stage = 0; stage < pp; ++stage) {
          const RankStats& k = r.ranks[size_t(stage)];
          REQUIRE(std::ssize(k.activations) == 2 * m);  // each micro-batch kept, then freed
          int chunks = 0;
          double time_s = 0;
          for (const ActivationPoint& a : k.activations) {
            CHECK(std::abs(a.chunks - chunks) == 1);
            CHECK(a.bytes == 1000 * a.chunks);
            CHECK(a.time_s >= time_s);
            chunks = a.chunks;
            time_s = a.time_s;
          }
          CHECK(chunks == 0);  // all freed by the step's end
          // 1F1B: the stage's warm-up forwards, then the first steady one; GPipe: every forward.
          const int peak = schedule == Schedule::gpipe ? m : std::min(pp - stage, m);
          CHECK(k.peak_micro_batch == peak - 1);
          CHECK(k.peak_chunk == 0);
          const auto first = std::find_if(k.activations.begin(), k.activations.end(),
                                           [&](const ActivationPoint& a) { return a.chunks == peak; });
          REQUIRE(first != k.activations.end());
          CHECK(k.peak_activation_s == first->time_s);
        }
      }
}

TEST_CASE("a transfer takes its time on the sender, the recv ends when the data has arrived",
          "[event]") {
  UniformPricer pricer;
  pricer.comm_s = 1;
  const StepPrograms step = build_step(small_gpt(), small_training(), layout(1, 1, 2, 1), true);
  const SimResult r = simulate(step, pricer);
  REQUIRE(r.ok());
  auto timing = [&](size_t stage, ActionKind kind, Pass pass) {
    const Program& p = step.programs[stage];
    for (size_t i = 0; i < p.actions.size(); ++i)
      if (p.actions[i].kind == kind && p.actions[i].pass == pass) return r.timings[stage][i];
    FAIL("no such action");
    return ActionTiming{};
  };
  // Stage 0: forward of 8 layers [0, 8], send [8, 9]; stage 1 receives over [8, 9], runs
  // forward [9, 17] and backward [17, 33], sends the gradient [33, 34]; stage 0's backward runs
  // [34, 50]; the tied embeddings' all-reduce [50, 51].
  CHECK(timing(0, ActionKind::send, Pass::forward).start_s == 8);
  CHECK(timing(1, ActionKind::recv, Pass::forward).start_s == 8);
  CHECK(timing(1, ActionKind::recv, Pass::forward).end_s == 9);
  CHECK(timing(1, ActionKind::send, Pass::backward).start_s == 33);
  CHECK(timing(0, ActionKind::recv, Pass::backward).end_s == 34);
  CHECK(r.step_time_s == 51);
  // Stage 0 idles 27 s: 3 of them communicating (its send, the gradient it waits for, the
  // all-reduce), the rest waiting for stage 1.
  CHECK(r.ranks[0].exposed_comm_s == 3);
  CHECK(r.ranks[0].bubble_s == 51 - 24 - 3);
}

TEST_CASE("gradient reductions overlap the backward, only the last ones are exposed", "[event]") {
  // Llama 3 8B, dp=2: every unit is its own bucket. Forward 32 s, backward 64 s; each bucket's
  // reduction (1 s) runs behind the next layer's backward, except the last layer's and the
  // embedding's, which run after the backward ends.
  UniformPricer pricer;
  pricer.comm_s = 1;
  const SimResult r = simulate(
      build_step(load_model("llama3-8b"), test::training(2, 4096), layout(2, 1, 1, 1), true),
      pricer);
  REQUIRE(r.ok());
  CHECK(r.symmetry.find("each stands for 2 ranks") != std::string::npos);
  CHECK(r.step_time_s == 98);
  CHECK(r.ranks[0].busy_s == 96);
  CHECK(r.ranks[0].exposed_comm_s == 2);
  CHECK(r.ranks[0].stream_busy_s[static_cast<size_t>(Stream::dp_comm)] == 34);
}

// UniformPricer's prices, and every group action on a communication stream taking `share` of the
// compute beside it.
struct SharingPricer : UniformPricer {
  double share = 0;
  double interference_share(const Program&, const Action& a) const override {
    return is_group_action(a) && a.stream != Stream::compute ? share : 0;
  }
};

TEST_CASE("compute slowed by the communication it overlaps, priced in a second run", "[event]") {
  // As above: 32 of the 34 one-second reductions run beside the backward; at a share of 1/4 they
  // add 8 s to it, which still hides them, and the last two stay exposed after it.
  SharingPricer pricer;
  pricer.comm_s = 1;
  pricer.share = 0.25;
  const StepPrograms dp =
      build_step(load_model("llama3-8b"), test::training(2, 4096), layout(2, 1, 1, 1), true);
  const SimResult r = simulate(dp, pricer);
  REQUIRE(r.ok());
  REQUIRE(r.interference_s.size() == 1);
  CHECK(r.interference_s[0] == Approx(8));
  CHECK(r.ranks[0].busy_s == Approx(96 + 8));
  CHECK(r.step_time_s == Approx(96 + 8 + 2));
  // One thread in program order overlaps nothing; neither does a share of 0.
  CHECK(simulate(dp, pricer, StreamExecution::program_order).interference_s[0] == 0);
  pricer.share = 0;
  CHECK(simulate(dp, pricer).step_time_s == 98);
}

TEST_CASE("a collective starts when its last member arrives", "[event]") {
  const StepPrograms s = two_ranks({compute(1), tp_all_reduce(2), compute(1)},
                                   {compute(3), tp_all_reduce(2), compute(1)});
  const SimResult r = simulate(s, ParamsPricer{});
  REQUIRE(r.ok());
  for (size_t rank : {0, 1}) {
    CHECK(r.timings[rank][1].start_s == 3);
    CHECK(r.timings[rank][1].end_s == 5);
    CHECK(r.timings[rank][2].end_s == 6);
  }
  // Rank 0 reached it at 1 and waited for rank 1 until 3; its timing starts at 3.
  CHECK(r.wait_s[0] == std::vector<double>{0, 2, 0});
  CHECK(r.wait_s[1] == std::vector<double>{0, 0, 0});
  CHECK(r.ranks[0].idle_s == 4);
  CHECK(r.ranks[0].exposed_comm_s == 2);
  CHECK(r.ranks[0].bubble_s == 2);
  // The critical path: rank 1's compute, the all-reduce, the compute after it.
  REQUIRE(r.critical_path.size() == 3);
  CHECK(r.critical_path[0].program == 1);
  CHECK(r.critical_path[0].on_path_s == 3);
  CHECK(r.critical_path_s[static_cast<size_t>(Stream::tp_comm)] == 2);
}

TEST_CASE("in program order a rank runs one action at a time, a send is only posted", "[event]") {
  // Llama 3 8B, dp=2, as the gradient reductions above: concurrently the reductions hide behind
  // the backward (98 s); in program order every reduction holds the rank (96 s + 34 s).
  UniformPricer pricer;
  pricer.comm_s = 1;
  const StepPrograms dp =
      build_step(load_model("llama3-8b"), test::training(2, 4096), layout(2, 1, 1, 1), true);
  CHECK(simulate(dp, pricer).step_time_s == 98);
  const SimResult serial = simulate(dp, pricer, StreamExecution::program_order);
  REQUIRE(serial.ok());
  CHECK(serial.step_time_s == 96 + 34);
  CHECK(serial.ranks[0].stream_busy_s[static_cast<size_t>(Stream::dp_comm)] == 34);

  // Rank 0: compute 1, send (transfer 2: tag 1), compute 1. The send does not hold it: its second
  // compute runs [1, 2], while rank 1's recv ends when the transfer does, at 3.
  Action send = p2p(ActionKind::send, 1, 1);
  send.params = 2;
  const StepPrograms s =
      two_ranks({compute(1), send, compute(1)}, {p2p(ActionKind::recv, 0, 1), compute(1)});
  const SimResult r = simulate(s, ParamsPricer{}, StreamExecution::program_order);
  REQUIRE(r.ok());
  CHECK(r.timings[0][2].start_s == 1);
  CHECK(r.timings[0][2].end_s == 2);
  CHECK(r.timings[1][0].end_s == 3);
  CHECK(r.timings[1][1].end_s == 4);
  // Rank 1 reached its recv at 0 and waited until the send started, at 1.
  CHECK(r.timings[1][0].start_s == 1);
  CHECK(r.wait_s[1] == std::vector<double>{1, 0});
  CHECK(r.wait_s[0] == std::vector<double>{0, 0, 0});
}

TEST_CASE("a deadlock is reported with what each rank waits for", "[event]") {
  // Both ranks receive before they send.
  const SimResult crossed =
      simulate(two_ranks({p2p(ActionKind::recv, 1, 7), p2p(ActionKind::send, 1, 8)},
                         {p2p(ActionKind::recv, 0, 8), p2p(ActionKind::send, 0, 7)}),
               ParamsPricer{});
  CHECK_FALSE(crossed.ok());
  REQUIRE(crossed.deadlock.size() == 2);
  CHECK(crossed.deadlock[0].rank == 0);
  CHECK(crossed.deadlock[0].stream == Stream::pp_comm);
  CHECK(crossed.deadlock[0].waiting_for == "send activation on rank 1 (pp-comm) (not done)");
  CHECK(crossed.deadlock[1].waiting_for == "send activation on rank 0 (pp-comm) (not done)");

  const SimResult lonely =
      simulate(two_ranks({compute(1), tp_all_reduce(1)}, {compute(1)}), ParamsPricer{});
  REQUIRE(lonely.deadlock.size() == 1);
  CHECK(lonely.deadlock[0].waiting_for ==
        "1 of 2 members of its group arrived; the others never issue it");

  const SimResult unmatched =
      simulate(two_ranks({p2p(ActionKind::recv, 1, 5)}, {}), ParamsPricer{});
  REQUIRE(unmatched.deadlock.size() == 1);
  CHECK(unmatched.deadlock[0].waiting_for == "a send from rank 1 with tag 5, which no program has");

  const SimResult mismatched =
      simulate(two_ranks({tp_all_reduce(1)}, {tp_all_reduce(2)}), ParamsPricer{});
  REQUIRE(mismatched.errors.size() == 1);
}

TEST_CASE("the critical path adds up to the step time", "[event]") {
  UniformPricer pricer;
  pricer.comm_s = 0.25;
  Layout l = layout(2, 2, 4, 8, Schedule::interleaved, 2);
  l.zero = 1;
  const SimResult r = simulate_small(small_gpt(), l, pricer);
  REQUIRE(r.ok());
  double total = 0;
  for (const CriticalAction& c : r.critical_path) total += c.on_path_s;
  CHECK(total == Approx(r.step_time_s));
  double by_stream = 0;
  for (double s : r.critical_path_s) by_stream += s;
  CHECK(by_stream == Approx(r.step_time_s));
}

TEST_CASE("benchmark: one step of 1,024 ranks with 64 micro-batches", "[.][benchmark]") {
  // GPT-3 175B at tp=8, pp=8, dp=16 with SP and ZeRO-1.
  const Model m = load_model("gpt3-175b");
  UniformPricer pricer;
  pricer.comm_s = 1e-4;
  for (int vpp : {1, 2}) {
    Layout l = layout(16, 8, 8, 64, vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b, vpp);
    l.sequence_parallel = true;
    l.zero = 1;
    // Best of five: the figure is the code's cost, not the machine's other load.
    double build_s = 1e9, sim_s = 1e9;
    SimResult r;
    for (int repeat = 0; repeat < 5; ++repeat) {
      const auto t0 = std::chrono::steady_clock::now();
      const StepPrograms step = build_step(m, test::training(1024, 2048), l, true);
      const auto t1 = std::chrono::steady_clock::now();
      r = simulate(step, pricer);
      const auto t2 = std::chrono::steady_clock::now();
      build_s = std::min(build_s, std::chrono::duration<double>(t1 - t0).count());
      sim_s = std::min(sim_s, std::chrono::duration<double>(t2 - t1).count());
    }
    REQUIRE(r.ok());
    std::printf("%s: %lld actions, build %.1f ms, simulate %.1f ms, %.1fM events/s\n  %s\n",
                to_string(l).c_str(), static_cast<long long>(r.events), build_s * 1e3, sim_s * 1e3,
                double(r.events) / sim_s / 1e6, r.symmetry.c_str());
    CHECK(build_s + sim_s < 0.1);
  }
}

TEST_CASE("a simulation's actions counted before it is built, and a step too long refused",
          "[event]") {
  const Model m = test::small_gpt();
  const Training t = test::small_training();
  for (const Layout& l :
       {test::layout(2, 1, 1, 4), test::layout(1, 2, 2, 8), test::layout(2, 1, 2, 4)})
    for (bool symmetric : {true, false}) {
      const StepPrograms step = build_step(m, t, l, symmetric);
      int64_t built = 0;
      for (const Program& p : step.programs) built += static_cast<int64_t>(p.actions.size());
      CHECK(simulated_actions(m, t, l, symmetric) == built);
    }
  // 2²⁰ micro-batches over two stages: far more actions than a simulation holds, refused before
  // anything is built.
  Training big = t;
  big.global_batch = int64_t{1} << 20;
  const Layout l = test::layout(1, 1, 2, static_cast<int>(big.global_batch));
  REQUIRE(simulated_actions(m, big, l, true) > kMaxSimulatedActions);
  CHECK_THROWS_AS(simulate_plan(m, load_cluster("local-cpu", 1), big, l, cpu_executor_options(),
                                true),
                  InputError);
}

}  // namespace shardplan
