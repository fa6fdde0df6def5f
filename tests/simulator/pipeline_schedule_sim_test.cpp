// Pipeline schedules in the step simulation: the bubbles of 1F1B, GPipe and interleaved 1F1B
// against Narayanan et al. 2021, ZB-H1 and ZB-H2 against Qi et al. 2024 and their closed form
// (simulator/pipeline_model.h), activations in flight against the p − stage rule, and deadlock
// freedom over many layouts.
#include <algorithm>
#include <catch2/catch.hpp>

#include "core/layout.h"
#include "simulator/event_simulator.h"
#include "simulator/pipeline_model.h"
#include "simulator/uniform_pricer.h"
#include "tests/core/layout_fixtures.h"
#include "tests/core/schedule_fixtures.h"
#include "tests/simulator/small_step.h"

namespace shardplan {

using test::layout;
using test::simulate_small;
using test::small_gpt;

TEST_CASE("1F1B with uniform stages and free communication: bubble (p−1)/(m+p−1)", "[event]") {
  // Narayanan et al. 2021 §2.2.1: the bubble is (p − 1) of (m + p − 1) forward-backward slots.
  const UniformPricer pricer;
  for (Schedule s : {Schedule::one_f_one_b, Schedule::gpipe})
    for (int pp : {2, 4, 8})
      for (int m : {1, 3, 8, 32}) {
        const SimResult r = simulate_small(small_gpt(), layout(1, 1, pp, m, s), pricer);
        REQUIRE(r.ok());
        const double slot_s = 3.0 * 16 / pp;  // forward + backward of 16/pp layers
        CHECK(r.step_time_s == Approx((m + pp - 1) * slot_s));
        for (const RankStats& rank : r.ranks) {
          CHECK(rank.busy_s == Approx(m * slot_s));
          CHECK(rank.idle_s / r.step_time_s == Approx(double(pp - 1) / (m + pp - 1)));
          CHECK(rank.bubble_s == Approx(rank.idle_s));
          CHECK(rank.exposed_comm_s == 0);
        }
      }
}

TEST_CASE("ZB-H1 with equal F, B and W and free communication: bubble (p−1)(F + B − W)",
          "[event]") {
  // Qi et al. 2024 §3.1 (DeepSeek-V3's Table 2 writes it (p−1)(F + B − 2W) with B the whole
  // backward, B + W here): a third of 1F1B's (p−1)(F + B + W). Each activation is kept from F to W:
  // pp micro-batches at most on every stage, 1F1B's first stage's peak.
  UniformPricer pricer;
  pricer.chunk_activation_bytes = 1000;
  for (int pp : {2, 4, 8})
    for (int m : {1, 3, 8, 32}) {
      INFO("pp=" << pp << " m=" << m);
      const SimResult r = simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::zb_h1), pricer);
      REQUIRE(r.ok());
      const double pass_s = 16.0 / pp;  // F, B or W of 16/pp layers
      // With fewer micro-batches than stages, too few W are left to fill the wait for the B.
      if (m >= pp) CHECK(r.step_time_s == Approx(3 * m * pass_s + (pp - 1) * pass_s));
      for (int stage = 0; stage < pp; ++stage) {
        const RankStats& k = r.ranks[size_t(stage)];
        CHECK(k.busy_s == Approx(3 * m * pass_s));
        CHECK(k.peak_activation_chunks == std::min(pp, m));
      }
    }
}

// UniformPricer with W a given multiple of the forward (UniformPricer's W equals F).
struct WeightGradPricer : UniformPricer {
  double weight_grad_factor = 1;
  double duration_s(const Program& p, const Action& a) const override {
    const double s = UniformPricer::duration_s(p, a);
    return a.kind == ActionKind::compute && a.pass == Pass::weight_grad ? s * weight_grad_factor
                                                                        : s;
  }
};

TEST_CASE("ZB-H1, ZB-H2 and ZB-V against their pipeline model for unequal F B and W", "[event]") {
  // pipeline_model.h: each stage but the slowest adds F + B − min(W, F, B) under ZB-H1 and, once
  // m ≥ 2p − 1, F + B − min(2W, 2F, B) under ZB-H2, ZB-H1's at m ≤ p and linearly between. With
  // F = B = W ZB-H2's bubble is (p − 1)·F, the fill; it holds up to 2p − 1 micro-batches. ZB-V's
  // order walked with half a stage per chunk is the simulation of its program, communication free.
  for (const auto& [b, w] : {std::pair{1.0, 1.0},
                             {2.0, 1.0},
                             {2.0, 0.5},
                             {1.0, 0.3},
                             {3.0, 2.0},
                             {4.0, 1.2},
                             {0.5, 2.0},
                             {1.0, 3.0}})
    for (int pp : {2, 4, 8})
      for (int m : {pp, pp + 2, 2 * pp - 1, 4 * pp})
        for (Schedule s : {Schedule::zb_h1, Schedule::zb_h2, Schedule::zb_v}) {
          WeightGradPricer pricer;
          pricer.backward_factor = 1 + b;
          pricer.weight_grad_factor = w;
          pricer.chunk_activation_bytes = 1000;
          const Layout l = layout(1, 1, pp, m, s, v_placement(s) ? 2 : 1);
          const SimResult r = simulate_small(small_gpt(), l, pricer);
          REQUIRE(r.ok());
          INFO(enum_name(s, kScheduleNames)
               << " pp=" << pp << " m=" << m << " B=" << b << " W=" << w);
          const double f_s = 16.0 / pp;  // F of 16/pp layers
          const std::vector<double> stage(size_t(pp), f_s * (1 + b + w)), f(size_t(pp), f_s),
              wg(size_t(pp), f_s * w);
          CHECK(r.step_time_s == Approx(pipeline_time_s(l, stage, {f, wg})));
          if (s == Schedule::zb_h2 && b == 1.0 && w == 1.0 && m >= 2 * pp - 1)
            CHECK(r.step_time_s == Approx(3 * m * f_s + (pp - 1) * f_s));
          for (int k = 0; k < pp; ++k) {
            CHECK(r.ranks[size_t(k)].peak_activation_chunks == inflight_chunk_microbatches(l, k));
            if (!v_placement(s))
              CHECK(r.ranks[size_t(k)].peak_activation_chunks ==
                    std::min(s == Schedule::zb_h2 ? 2 * pp - 1 : pp, m));
          }
        }
}

TEST_CASE("ZB-V with equal F, B and W: 1F1B's memory, a bubble below ZB-H1's from pp = 4",
          "[event]") {
  // Qi et al. 2024 §4: ZB-V holds at most 1F1B's first stage's activations, pp micro-batches of a
  // stage (2pp chunks of half a stage), on every stage. Its bubble, in passes of a chunk (half a
  // stage's), against ZB-H1's (pp − 1)(F + B − W) = 2(pp − 1) at the same memory: equal at pp = 2,
  // the fill alone (pp − 1) at pp = 4, below ZB-H1's at pp = 8 (the order's greedy steps leave
  // 11 where the fill is 7).
  UniformPricer pricer;
  pricer.chunk_activation_bytes = 1000;
  for (const auto& [pp, bubble] : {std::pair{2, 2}, {4, 3}, {8, 11}})
    for (int m : {2 * pp, 4 * pp}) {
      INFO("pp=" << pp << " m=" << m);
      const SimResult v =
          simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::zb_v, 2), pricer);
      const SimResult h1 =
          simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::zb_h1), pricer);
      REQUIRE(v.ok());
      const double chunk_s = 8.0 / pp;  // F, B or W of a chunk's 16/(2pp) layers
      CHECK(v.step_time_s == Approx((6 * m + bubble) * chunk_s));
      CHECK(h1.step_time_s == Approx((6 * m + 2 * (pp - 1)) * chunk_s));
      for (int k = 0; k < pp; ++k) CHECK(v.ranks[size_t(k)].peak_activation_chunks <= 2 * pp);
      CHECK(v.ranks[0].peak_activation_chunks == 2 * pp);
    }
}

TEST_CASE("interleaving v chunks divides the 1F1B bubble by v", "[event]") {
  // Narayanan et al. 2021 §2.2.2: bubble time (p − 1)(t_f + t_b)/v.
  const UniformPricer pricer;
  for (int pp : {2, 4, 8})
    for (int v : {2, 4}) {
      if (pp * v > 16) continue;
      for (int m : {pp, 2 * pp, 4 * pp}) {
        const SimResult plain = simulate_small(small_gpt(), layout(1, 1, pp, m), pricer);
        const SimResult inter =
            simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::interleaved, v), pricer);
        REQUIRE(inter.ok());
        INFO("pp=" << pp << " v=" << v << " m=" << m);
        for (size_t stage = 0; stage < size_t(pp); ++stage) {
          CHECK(inter.ranks[stage].busy_s == Approx(plain.ranks[stage].busy_s));
          CHECK(inter.ranks[stage].idle_s * v == Approx(plain.ranks[stage].idle_s));
        }
      }
    }
}

TEST_CASE("in-flight activations: p − stage under 1F1B, m under GPipe", "[event]") {
  UniformPricer pricer;
  pricer.chunk_activation_bytes = 1000;
  for (int pp : {2, 4, 8})
    for (int m : {1, 3, 16}) {
      const SimResult f = simulate_small(small_gpt(), layout(1, 1, pp, m), pricer);
      const SimResult g = simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::gpipe), pricer);
      for (int stage = 0; stage < pp; ++stage) {
        CHECK(f.ranks[stage].peak_activation_chunks == std::min(pp - stage, m));
        CHECK(f.ranks[stage].peak_activation_bytes == 1000 * std::min(pp - stage, m));
        CHECK(g.ranks[stage].peak_activation_chunks == m);
      }
    }
  // Interleaved (Megatron-LM): the warm-up of 2(p − r − 1) + (v − 1)p chunks plus the one in
  // flight, all m·v when m == p.
  for (int pp : {2, 4})
    for (int m : {pp, 2 * pp, 4 * pp}) {
      const int v = 2;
      const SimResult r =
          simulate_small(small_gpt(), layout(1, 1, pp, m, Schedule::interleaved, v), pricer);
      for (int stage = 0; stage < pp; ++stage) {
        const int warmup = m == pp ? m * v : 2 * (pp - stage - 1) + (v - 1) * pp;
        CHECK(r.ranks[stage].peak_activation_chunks == std::min(warmup + 1, m * v));
      }
      // Korthikanti et al. 2022 §4.2.3: the first stage of the interleaved schedule stores the
      // activations of L(1 + (p − 1)/(p·v)) layers, here pv + p − 1 chunks of L/(pv) layers.
      if (m > pp) CHECK(r.ranks[0].peak_activation_chunks == pp * v + pp - 1);
    }
}

namespace {

// Every layout of the sweep runs to the end with every rank simulated, and symmetry changes
// nothing but the cost.
template <class MicroBatches>
void check_no_deadlock(Schedule s, int vpp, MicroBatches micro_batches) {
  UniformPricer pricer;
  pricer.comm_s = 0.125;
  int layouts = 0;
  for (const Layout& l : test::sweep_layouts(s, vpp, micro_batches)) {
    const Model m = l.ep > 1 ? test::small_moe() : small_gpt();
    if (m.num_layers % (l.pp * l.vpp) != 0) continue;
    // A split backward runs with ZeRO-0/1 and without full recomputation (validate_layout).
    if (splits_backward(s) && (l.zero > 1 || l.recompute == Recompute::full)) continue;
    INFO(to_string(l));
    const SimResult full = simulate_small(m, l, pricer, false);
    REQUIRE(full.ok());
    REQUIRE(full.ranks.size() == size_t(l.world()));
    const SimResult sym = simulate_small(m, l, pricer, true);
    REQUIRE(sym.ok());
    CHECK(sym.step_time_s == Approx(full.step_time_s).epsilon(1e-12));
    ++layouts;
  }
  CHECK(layouts > 50);
}

}  // namespace

TEST_CASE("no deadlock up to 64 ranks: GPipe", "[event][property]") {
  check_no_deadlock(Schedule::gpipe, 1, [](int pp) { return std::vector{1, pp + 1}; });
}

TEST_CASE("no deadlock up to 64 ranks: 1F1B", "[event][property]") {
  check_no_deadlock(Schedule::one_f_one_b, 1, [](int pp) { return std::vector{1, pp + 1}; });
}

TEST_CASE("no deadlock up to 64 ranks: interleaved 1F1B", "[event][property]") {
  check_no_deadlock(Schedule::interleaved, 2, [](int pp) { return std::vector{pp, 2 * pp}; });
}

TEST_CASE("no deadlock up to 64 ranks: ZB-V", "[event][property]") {
  check_no_deadlock(Schedule::zb_v, 2, [](int pp) { return std::vector{1, pp, 2 * pp + 1}; });
}

TEST_CASE("no deadlock up to 64 ranks: interleaved 1F1B with 4 chunks", "[event][property]") {
  check_no_deadlock(Schedule::interleaved, 4, [](int pp) { return std::vector{2 * pp}; });
}

}  // namespace shardplan
