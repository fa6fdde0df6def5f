// calibrate --from: a run whose compute took exactly k times the price refits a profile that
// prices it as measured; a collective's own time is its fastest member's.
#include "simulator/profile_refit.h"

#include <catch2/catch.hpp>
#include <set>

#include "core/error.h"
#include "simulator/comparison.h"
#include "simulator/device_efficiency.h"
#include "simulator/priced_ops.h"
#include "tests/simulator/measured_fixture.h"

namespace shardplan {
namespace {

TEST_CASE("refit: compute measured at k × its price is priced as measured", "[refit]") {
  // tp = 1: compute alone (test::scaled_measurement scales compute actions only).
  for (const std::string layout :
       {"dp=2", "pp=2", "dp=2,recompute=selective", "pp=2,recompute=full"}) {
    INFO(layout);
    const Plan p = test::tiny_cpu_plan(layout);
    const PlanSimulation before = test::simulate_every_rank(p);
    // Compute ran 1.7 times its price, the rest as priced. (One scale for every pass: a GEMM
    // shape that forward and backward share has one rate, as it has on the machine.)
    const auto scale = [](const Action& a) { return a.kind == ActionKind::compute ? 1.7 : 1.0; };
    const Measurement m = test::scaled_measurement(p, before, 3, scale);
    RefitReport report;
    const Profile refit = refit_profile(nullptr, {m}, {"measured.json"}, &report);
    CHECK(report.gemm_shapes > 0);
    CHECK(report.kernel_sizes > 0);
    for (const ComputeClassFit& c : report.compute) {
      INFO(c.name);
      CHECK(c.measured_s == Approx(1.7 * c.predicted_s));
    }
    const PlanSimulation after = test::simulate_every_rank(p, &refit);
    const Comparison c = compare_run(after, m);
    for (const KindTime& k : c.kinds)
      if (k.name == "forward" || k.name == "backward") {
        INFO(k.rank << " " << k.name);
        CHECK(k.predicted_s == Approx(k.measured_s).epsilon(1e-9));
      }
  }
}

TEST_CASE("refit: GEMMs timed apart take their own ratio, the kernels the rest", "[refit]") {
  // dp=2: each kernel size in one class, so every class comes out exactly as measured; pp=2 with
  // selective recomputation: a kernel size serves classes with different ratios (the final norm's
  // and the layers' norms, the re-forward inside the backward) and takes one rate between them.
  for (const auto& [layout, tolerance] :
       {std::pair{"dp=2", 1e-9}, {"pp=2,recompute=selective", 1e-2}}) {
    INFO(layout);
    const Plan p = test::tiny_cpu_plan(layout);
    const PlanSimulation before = test::simulate_every_rank(p);
    // Compute ran 1.7 times its price in all, of which the GEMMs 1.5 times theirs: the kernels
    // took the rest, more than 1.7 times theirs.
    const auto scale = [](const Action& a) { return a.kind == ActionKind::compute ? 1.7 : 1.0; };
    Measurement m = test::scaled_measurement(p, before, 3, scale);
    const auto gemms_priced = [&](const Profile* profile) {
      ExecutionOptions x = cpu_executor_options();
      x.profile = profile;
      const OpTable ops = op_table(p, device_rates(p.cluster.device, p.training.dtype, profile), x);
      std::vector<ProgramGemms> out;
      for (const Program& program : m.programs)
        out.push_back(program_gemms(ops, program, p.layout.recompute));
      return out;
    };
    for (const ProgramGemms& g : gemms_priced(nullptr))
      m.gemms.push_back({g.flops, std::vector<double>(3, 1.5 * g.time_s)});
    const Profile refit = refit_profile(nullptr, {m}, {"measured.json"}, nullptr);
    const std::vector<ProgramGemms> priced = gemms_priced(nullptr), after = gemms_priced(&refit);
    for (size_t rank = 0; rank < priced.size(); ++rank)
      CHECK(after[rank].time_s == Approx(1.5 * priced[rank].time_s).epsilon(1e-9));
    // The compute actions still come out as measured.
    const Comparison c = compare_run(test::simulate_every_rank(p, &refit), m);
    for (const KindTime& k : c.kinds)
      if (k.name == "forward" || k.name == "backward") {
        INFO(k.rank << " " << k.name);
        CHECK(k.predicted_s == Approx(k.measured_s).epsilon(tolerance));
      }
  }
}

TEST_CASE("refit: a collective's own time is its fastest member's", "[refit]") {
  const Plan p = test::tiny_cpu_plan("tp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  Measurement m = test::scaled_measurement(p, s, 3, [](const Action&) { return 1.0; });
  // Rank 0 reaches every tp all-reduce 1 ms before rank 1 and waits for it; the all-reduce itself
  // takes 40 us on both.
  std::set<int64_t> sizes;  // the layers' b·s·h, and the loss's b·s and 2·b·s fp32 values
  for (auto& step : m.timings)
    for (size_t r = 0; r < step.size(); ++r)
      for (size_t i = 0; i < step[r].size(); ++i) {
        const Action& a = m.programs[r].actions[i];
        if (a.kind != ActionKind::collective) continue;
        sizes.insert(a.bytes);
        step[r][i].end_s = step[r][i].start_s + 40e-6 + (r == 0 ? 1e-3 : 0);
      }
  const Profile refit = refit_profile(nullptr, {m}, {"measured.json"}, nullptr);
  const CollectiveFit* f = find_collective_fit(refit, Collective::all_reduce, 0, 2, false);
  REQUIRE(f != nullptr);
  REQUIRE(f->measured.size() == 3);
  for (const auto& point : f->measured) {
    CHECK(sizes.count(point.bytes) == 1);
    CHECK(point.time_us == Approx(40));
    CHECK(f->time_s(point.bytes) == Approx(40e-6));
  }
}

TEST_CASE("refit: parameter gathers refit the cold-input all_gather, from the warm one's sweep",
          "[refit]") {
  const Plan p = test::tiny_cpu_plan("dp=2,zero=3");
  const PlanSimulation s = test::simulate_every_rank(p);
  Measurement m = test::scaled_measurement(p, s, 3, [](const Action&) { return 1.0; });
  std::set<int64_t> sizes;
  for (auto& step : m.timings)
    for (size_t r = 0; r < step.size(); ++r)
      for (size_t i = 0; i < step[r].size(); ++i) {
        const Action& a = m.programs[r].actions[i];
        if (a.kind != ActionKind::param_gather) continue;
        sizes.insert(a.bytes);
        step[r][i].end_s = step[r][i].start_s + 1e-3;
      }
  REQUIRE(!sizes.empty());
  Profile base = refit_profile(nullptr, {m}, {"measured.json"}, nullptr);
  base.collectives = {{Collective::all_gather, 0, 2, 1, 1, {{1, 1.0}, {1 << 30, 2e5}}}};
  const Profile refit = refit_profile(&base, {m}, {"measured.json"}, nullptr);
  CHECK(*find_collective_fit(refit, Collective::all_gather, 0, 2, false) == base.collectives[0]);
  const CollectiveFit* cold = find_collective_fit(refit, Collective::all_gather, 0, 2, true);
  REQUIRE(cold != nullptr);
  REQUIRE(cold->measured.size() == sizes.size() + 2);
  CHECK(cold->measured.front().time_us == 1.0);  // the warm sweep's, where the run met no size
  CHECK(cold->measured.back().time_us == 2e5);
  for (int64_t b : sizes) CHECK(cold->time_s(b) == Approx(1e-3));
}

TEST_CASE("refit: a ZeRO reduce-scatter's own memory traffic is taken off its time", "[refit]") {
  const Plan p = test::tiny_cpu_plan("dp=2,zero=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  Measurement m = test::scaled_measurement(p, s, 3, [](const Action&) { return 1.0; });
  const double memory_bytes_per_s =
      device_rates(p.cluster.device, p.training.dtype).memory_bytes_per_s;
  std::set<std::pair<int64_t, double>> expected;  // bytes, the collective's own time
  for (auto& step : m.timings)
    for (size_t r = 0; r < step.size(); ++r)
      for (size_t i = 0; i < step[r].size(); ++i) {
        const Action& a = m.programs[r].actions[i];
        if (a.kind != ActionKind::grad_reduce) continue;
        const double local = double(grad_reduce_local_bytes(a, 2, 2)) / memory_bytes_per_s;
        REQUIRE(local > 0);
        step[r][i].end_s = step[r][i].start_s + 1e-3 + local;
        expected.insert({a.bytes, 1e-3});
      }
  REQUIRE(expected.size() == 1);
  const Profile refit = refit_profile(nullptr, {m}, {"measured.json"}, nullptr);
  const CollectiveFit* f =
      find_collective_fit(refit, Collective::reduce_scatter, 0, 2, /*cold_input=*/true);
  REQUIRE(f != nullptr);
  REQUIRE(f->measured.size() == 1);
  CHECK(f->measured[0].bytes == expected.begin()->first);
  CHECK(f->measured[0].time_us == Approx(1e3));
}

TEST_CASE("refit: runs of another backend or dtype than the profile are an error", "[refit]") {
  const Plan p = test::tiny_cpu_plan("dp=2");
  const PlanSimulation s = test::simulate_every_rank(p);
  const Measurement m = test::scaled_measurement(p, s, 2, [](const Action&) { return 1.0; });
  Profile cuda = refit_profile(nullptr, {m}, {"a.json"}, nullptr);
  cuda.backend = Backend::cuda;
  try {
    refit_profile(&cuda, {m}, {"a.json"}, nullptr);
    FAIL("a cpu run refitting a cuda profile must be an error");
  } catch (const InputError& e) {
    CHECK(e.file == "a.json");
    CHECK(e.field == "backend");
  }
}

}  // namespace
}  // namespace shardplan
