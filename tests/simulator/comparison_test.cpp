// Predicted against measured: measured.json read back exactly, compare_run's sums and errors on a
// measurement made by scaling the simulation, and the ranking checks of demo.
#include "simulator/comparison.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "core/error.h"
#include "simulator/comparison_report.h"
#include "simulator/device_efficiency.h"
#include "simulator/uniform_pricer.h"
#include "tests/simulator/measured_fixture.h"

namespace shardplan {
namespace {

double compute_scale(const Action& a) {
  return a.kind == ActionKind::compute ? 1.25 : 1.0;
}

// UniformPricer's times, with every communication 1 ms and, on `slow_rank`, compute 1.5× as long.
struct SkewedPricer : UniformPricer {
  int64_t slow_rank = -1;
  explicit SkewedPricer(int64_t slow) : slow_rank(slow) {
    layer_forward_s = 0.01;
    comm_s = 0.001;
  }
  double duration_s(const Program& p, const Action& a) const override {
    const double d = UniformPricer::duration_s(p, a);
    return p.rank == slow_rank && a.kind == ActionKind::compute ? 1.5 * d : d;
  }
};

TEST_CASE("measurement: JSON round trip and actions checked against the programs", "[compare]") {
  const Plan p = test::tiny_cpu_plan("tp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  const Measurement m = test::scaled_measurement(p, s, 3, compute_scale);
  nlohmann::json j = measurement_to_json(m);
  const Measurement back = measurement_from_json(j, "measured.json");
  REQUIRE(back.timings.size() == 3);
  CHECK(back.timings[2][1][5].end_s == m.timings[2][1][5].end_s);
  CHECK(back.memory[1].peak_bytes == m.memory[1].peak_bytes);
  CHECK(to_string(back.plan.layout) == to_string(p.layout));
  CHECK(median_step_time_s(back) == Approx(m.steps[0].step_time_s * 1.015));
  // Steps 2 and 3 are s·1.01 and s·1.02: quartiles 1.0125 and 1.0175, half their distance 0.0025.
  CHECK(step_time_spread_s(back) == Approx(m.steps[0].step_time_s * 0.0025));

  j["actions"][3]["name"] = "forward mb9 c0";
  try {
    measurement_from_json(j, "measured.json");
    FAIL("a name that is not the program's must be an error");
  } catch (const InputError& e) {
    CHECK(e.file == "measured.json");
    CHECK(e.field == "actions[3].name");
  }
  j = measurement_to_json(m);
  j["actions"].erase(j["actions"].size() - 1);
  CHECK_THROWS_AS(measurement_from_json(j, "measured.json"), InputError);
  // An action that ends before it starts is a bad time, named as one.
  j = measurement_to_json(m);
  j["actions"][4]["end_s"] = j["actions"][4]["start_s"].get<double>() - 1e-3;
  try {
    measurement_from_json(j, "measured.json");
    FAIL("an end before the start must be an error");
  } catch (const InputError& e) {
    CHECK(e.field == "actions[4].end_s");
    CHECK_THAT(e.reason, Catch::Contains("is before the action's start_s"));
  }
}

TEST_CASE("measurement: interleaved runs merged, each without its warm-up", "[compare]") {
  const Plan p = test::tiny_cpu_plan("dp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  Measurement a = test::scaled_measurement(p, s, 3, compute_scale);
  Measurement b = test::scaled_measurement(p, s, 4, [](const Action&) { return 2.0; });
  // Every step's GEMM seconds and last action's end tell the run and the step: 0.1 · run + 0.01 ·
  // step.
  for (Measurement* m : {&a, &b}) {
    const double run = m == &a ? 1 : 2;
    std::vector<double> gemm_s;
    for (size_t step = 0; step < m->steps.size(); ++step) {
      gemm_s.push_back(0.1 * run + 0.01 * static_cast<double>(step));
      for (auto& rank : m->timings[step]) rank.back().end_s = gemm_s.back();
    }
    for (size_t rank = 0; rank < 2; ++rank) m->gemms.push_back({1e9, gemm_s});
  }
  a.memory[1].peak_bytes += 100;
  b.memory[0].peak_bytes += 200;
  const Measurement m = merge_runs({a, b});
  // a's steps 2..3, then b's 2..4: 5 steps, none of them warm-up.
  REQUIRE(m.steps.size() == 5);
  CHECK(m.warmup_steps == 0);
  for (size_t i = 0; i < 5; ++i) CHECK(m.steps[i].step == static_cast<int64_t>(i) + 1);
  CHECK(m.steps[0].step_time_s == a.steps[1].step_time_s);
  CHECK(m.steps[2].step_time_s == b.steps[1].step_time_s);
  std::vector<double> ends;
  for (const auto& step : m.timings) ends.push_back(step[1].back().end_s);
  const std::vector<double> expected{0.11, 0.12, 0.21, 0.22, 0.23};
  REQUIRE(ends.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(ends[i] == Approx(expected[i]));
    CHECK(m.gemms[0].seconds[i] == Approx(expected[i]));
  }
  CHECK(m.memory[0].peak_bytes == b.memory[0].peak_bytes);
  CHECK(m.memory[1].peak_bytes == a.memory[1].peak_bytes);
  // The median of the five: b's three steps are 2× slower, so one of them.
  CHECK(median_step_time_s(m) == Approx(b.steps[1].step_time_s));
  const Measurement back = measurement_from_json(measurement_to_json(m), "merged.json");
  CHECK(back.steps.size() == 5);
  CHECK(median_step_time_s(back) == median_step_time_s(m));
}

TEST_CASE("compare: sums per kind and rank, step and memory errors", "[compare]") {
  const Plan p = test::tiny_cpu_plan("tp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  const Measurement m = test::scaled_measurement(p, s, 3, compute_scale);
  const Comparison c = compare_run(s, m);
  CHECK(c.predicted_step_time_s == s.step_time_s);
  CHECK(c.measured_step_time_s == median_step_time_s(m));
  CHECK(c.measured_steps == 2);
  CHECK(c.peak_error() == 0);
  bool saw_forward = false, saw_collective = false;
  for (const KindTime& k : c.kinds) {
    INFO(k.rank << " " << k.name);
    if (k.name == "forward") {
      saw_forward = true;
      CHECK(k.measured_s == Approx(1.25 * k.predicted_s));
    }
    if (k.name == "tp all_reduce") {
      saw_collective = true;
      CHECK(k.measured_s == Approx(k.predicted_s));
    }
  }
  CHECK(saw_forward);
  CHECK(saw_collective);
  // The gaps are the compute kinds', largest first: backward (2× forward's FLOPs) leads.
  REQUIRE(c.gaps.size() >= 2);
  CHECK(c.gaps[0].name == "backward");
  CHECK(c.gaps[0].gap_s > 0);
  CHECK(relative_error(1.1, 1.0) == Approx(0.1));
}

TEST_CASE("compare: noise inside the steps, which per-action medians leave out", "[compare]") {
  const Plan p = test::tiny_cpu_plan("dp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  const Measurement steady = test::scaled_measurement(p, s, 4, [](const Action&) { return 1.0; });
  const Comparison quiet = compare_run(s, steady);
  CHECK(quiet.step_noise_s == Approx(0).margin(1e-12));
  // Each measured step has a different compute action 1 ms longer on every rank: no action's
  // median moves, every step's does.
  constexpr double kSlow = 1e-3;
  Measurement m = steady;
  for (size_t step = 1; step < m.timings.size(); ++step) {
    for (size_t r = 0; r < m.programs.size(); ++r) {
      size_t compute = 0;
      for (size_t a = 0; a < m.programs[r].actions.size(); ++a)
        if (m.programs[r].actions[a].kind == ActionKind::compute && ++compute == step)
          m.timings[step][r][a].end_s += kSlow;
    }
    m.steps[step].step_time_s += kSlow;
  }
  const Comparison noisy = compare_run(s, m);
  CHECK(noisy.measured_step_time_s == Approx(quiet.measured_step_time_s + kSlow));
  CHECK(noisy.step_noise_s == Approx(kSlow));
  REQUIRE(noisy.kinds.size() == quiet.kinds.size());
  for (size_t k = 0; k < noisy.kinds.size(); ++k) {
    INFO(noisy.kinds[k].rank << " " << noisy.kinds[k].name);
    CHECK(noisy.kinds[k].measured_s == Approx(quiet.kinds[k].measured_s));
  }
}

TEST_CASE("compare: a rank's wait in collectives for a slower rank, set apart from the transfer",
          "[compare]") {
  const Plan p = test::tiny_cpu_plan("tp=2");
  PlanSimulation predicted = test::simulate_every_rank(p);
  predicted.result = simulate(predicted.step, SkewedPricer(-1), StreamExecution::program_order);
  predicted.step_time_s = predicted.result.step_time_s;
  // The run: rank 1 computes 1.5× slower; its timeline as an executor records it, every group
  // action from its rank's call (the simulated start less the wait).
  const SimResult run = simulate(predicted.step, SkewedPricer(1), StreamExecution::program_order);
  REQUIRE(run.ok());
  const Measurement base =
      test::scaled_measurement(p, predicted, 2, [](const Action&) { return 1.0; });
  Measurement m = base;
  for (size_t step = 0; step < m.timings.size(); ++step) {
    m.steps[step].step_time_s = run.step_time_s;
    for (size_t r = 0; r < 2; ++r)
      for (size_t a = 0; a < m.timings[step][r].size(); ++a)
        m.timings[step][r][a] = {run.timings[r][a].start_s - run.wait_s[r][a],
                                 run.timings[r][a].end_s};
  }
  const Comparison c = compare_run(predicted, m);
  double rank0_wait_s = 0;
  bool saw_collective = false;
  for (const KindTime& k : c.kinds) {
    INFO(k.rank << " " << k.name);
    CHECK(k.predicted_wait_s == 0);                  // equal ranks arrive together
    if (k.rank == 1) CHECK(k.measured_wait_s == 0);  // the slow rank never waits
    if (k.name == "tp all_reduce") {
      saw_collective = true;
      // Without its wait, a collective took what the cost model priced.
      CHECK(k.measured_s - k.measured_wait_s == Approx(k.predicted_s));
      if (k.rank == 0) {
        CHECK(k.measured_wait_s > 0);
        rank0_wait_s += k.measured_wait_s;
      }
    }
  }
  CHECK(saw_collective);
  // Rank 0 waits out rank 1's extra compute before each collective: all of it but what follows
  // the last collective (the head's compute is free under UniformPricer).
  double extra_s = 0;
  for (size_t a = 0; a < m.programs[1].actions.size(); ++a)
    if (m.programs[1].actions[a].kind == ActionKind::compute)
      extra_s += (run.timings[1][a].end_s - run.timings[1][a].start_s) / 3;  // 1.5× − 1×
  CHECK(rank0_wait_s <= extra_s + 1e-12);
  CHECK(rank0_wait_s > 0.5 * extra_s);
  // The gaps are on the slow rank, its compute's; it waited for nobody.
  CHECK(c.gap_rank == 1);
  REQUIRE(!c.gaps.empty());
  CHECK(c.gaps[0].name == "backward");
  bool saw_wait_gap = false;
  for (const Gap& g : c.gaps)
    if (g.name == kPartnerWait) {
      saw_wait_gap = true;
      CHECK(g.gap_s == 0);
    }
  CHECK(saw_wait_gap);
}

TEST_CASE("compare: GEMMs per rank, read back from measured.json, beside the cost model's",
          "[compare]") {
  const Plan p = test::tiny_cpu_plan("tp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  Measurement m = test::scaled_measurement(p, s, 3, compute_scale);
  std::vector<ProgramGemms> priced;
  const OpTable ops =
      op_table(p, device_rates(p.cluster.device, p.training.dtype), cpu_executor_options());
  for (size_t rank = 0; rank < m.programs.size(); ++rank) {
    priced.push_back(program_gemms(ops, m.programs[rank], p.layout.recompute));
    // The steps' GEMMs 1.25× the cost model's, and 2× in the warm-up step, which the median skips.
    const double t = priced.back().time_s;
    m.gemms.push_back({priced.back().flops, {2 * t, 1.25 * t, 1.25 * t}});
  }
  REQUIRE(priced[0].flops > 0);
  nlohmann::json j = measurement_to_json(m);
  const Measurement back = measurement_from_json(j, "measured.json");
  REQUIRE(back.gemms.size() == 2);
  CHECK(back.gemms[1].seconds == m.gemms[1].seconds);
  CHECK(median_gemm_s(back)[1] == Approx(1.25 * priced[1].time_s));

  const Comparison c = compare_run(s, back, priced);
  REQUIRE(c.gemms.size() == 2);
  CHECK(c.gemms[1].rank == 1);
  CHECK(c.gemms[1].measured_flops == c.gemms[1].predicted_flops);
  CHECK(relative_error(c.gemms[1].predicted_s, c.gemms[1].measured_s) == Approx(-0.2));
  CHECK(comparison_to_json(c)["gemms"].size() == 2);
  // A run that timed no GEMM (a GPU's) compares none.
  Measurement untimed = back;
  for (MeasuredGemms& g : untimed.gemms) std::fill(g.seconds.begin(), g.seconds.end(), 0.0);
  CHECK(compare_run(s, untimed, priced).gemms.empty());

  // An older measured.json without the keys: no GEMM comparison.
  nlohmann::json old = j;
  for (auto& rank : old["ranks"]) rank.erase("gemm_flops_per_step"), rank.erase("gemm_s");
  CHECK(compare_run(s, measurement_from_json(old, "old.json"), priced).gemms.empty());

  const auto field_of_error = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json bad = j;
    spoil(bad);
    try {
      measurement_from_json(bad, "measured.json");
    } catch (const InputError& e) {
      CHECK(e.file == "measured.json");
      return e.field;
    }
    return std::string("no error");
  };
  CHECK(field_of_error([](auto& b) { b["ranks"][0]["gemm_s"].erase(0); }) == "ranks[0].gemm_s");
  CHECK(field_of_error([](auto& b) { b["ranks"][0]["gemm_s"] = 0.5; }) == "ranks[0].gemm_s");
  CHECK(field_of_error([](auto& b) { b["ranks"][1]["gemm_s"][2] = -1; }) == "ranks[1].gemm_s[2]");
  CHECK(field_of_error([](auto& b) { b["ranks"][0]["gemm_flops_per_step"] = -5; }) ==
        "ranks[0].gemm_flops_per_step");
  CHECK(field_of_error([](auto& b) { b["ranks"][0].erase("gemm_flops_per_step"); }) ==
        "ranks[0].gemm_flops_per_step");
  CHECK(field_of_error([](auto& b) {
          b["ranks"][1].erase("gemm_flops_per_step");
          b["ranks"][1].erase("gemm_s");
        }) == "ranks");
}

TEST_CASE("compare: rankings and the order over pairs the measurements tell apart", "[compare]") {
  CHECK(ranks_by({3.0, 1.0, 2.0, 1.0}) == std::vector<int>{4, 1, 3, 1});
  // Measured 1.0 ± 0.05, 1.3 ± 0.05, 1.32 ± 0.05: only (0,1) and (0,2) are told apart.
  const OrderAgreement a = order_agreement({0.9, 1.2, 0.95}, {1.0, 1.3, 1.32}, {0.05, 0.05, 0.05});
  CHECK(a.distinguishable_pairs == 2);
  CHECK(a.agreeing_pairs == 2);
  const OrderAgreement b = order_agreement({1.5, 1.2, 0.95}, {1.0, 1.3, 1.32}, {0.05, 0.05, 0.05});
  CHECK(b.agreeing_pairs == 0);
  CHECK(b.disagreeing.size() == 2);
}

}  // namespace
}  // namespace shardplan
