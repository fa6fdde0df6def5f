// Pricing with a calibration profile: GEMMs at its measured rate for their shape, memory-bound
// kernels at its bandwidth, collectives by its alpha-beta fits, and no datasheet efficiency on top
// of any measured figure. Every expected number is worked out by hand from the profile.
#include <catch2/catch.hpp>

#include "core/schedule.h"
#include "simulator/collective_cost.h"
#include "simulator/device_efficiency.h"
#include "simulator/estimate.h"
#include "simulator/estimate_report.h"
#include "simulator_fixtures.h"

namespace shardplan {
namespace {

// Round figures for hand arithmetic: one GEMM shape at 100 TFLOP/s, 2000 GB/s of memory, an
// all-reduce of 8 ranks on NVLink (level 0) and a send/recv pair on each level.
Profile hand_profile() {
  return Profile{.backend = Backend::cuda,
                 .device = "test GPU",
                 .ranks = 16,
                 .dtype = Dtype::bf16,
                 .memory_GBps = 2000,
                 .gemm = {{1024, 2048, 512, 100}, {4096, 4096, 4096, 400}},
                 .kernels = {},
                 .collectives = {{Collective::all_reduce, 0, 8, 20, 150, {}},
                                 {Collective::send_recv, 0, 2, 4, 300, {}},
                                 {Collective::send_recv, 1, 2, 10, 40, {}}}};
}

Device datasheet_device() {
  Device d;
  d.name = "test GPU";
  d.memory_GBps = 3350;
  d.peak_tflops_bf16 = 989.5;
  d.efficiency = {.matmul = 0.7,
                  .attention_forward = 0.5,
                  .attention_backward = 0.4,
                  .memory = 0.9,
                  .sm_count = 132};
  return d;
}

GroupSpan one_node(int size) {
  GroupSpan s;
  s.size = size;
  s.max_ranks_per_node = size;
  return s;
}

TEST_CASE("profile pricing: a GEMM takes flops / the profile's rate for its shape",
          "[profile][compute]") {
  const Profile p = hand_profile();
  const DeviceRates r = device_rates(datasheet_device(), Dtype::bf16, &p);
  // (m×k)·(k×n) with m = 1024, k = 512, n = 2048: the profile's first shape (m, n, k).
  const double flops = 2.0 * 1024 * 512 * 2048;
  CHECK(gemm_time_s(r, 1024, 512, 2048, 2) == flops / 100e12);
  CHECK(gemm_time_s(r, 1024, 512, 2048, 2, 3) == 3 * flops / 100e12);
  CHECK(gemm_time_s(r, 4096, 4096, 4096, 2) == 2.0 * 4096 * 4096 * 4096 / 400e12);
  // Memory-bound kernels at the measured 2000 GB/s, not × Device::efficiency.memory.
  CHECK(r.memory_bytes_per_s == 2000e9);
  CHECK(memory_time_s(r, 1e9) == 1e9 / 2000e9);

  // Without a profile, the datasheet: 3350 GB/s × 0.9 and the roofline.
  const DeviceRates d = device_rates(datasheet_device(), Dtype::bf16);
  CHECK(d.memory_bytes_per_s == Approx(3350e9 * 0.9));
  CHECK(gemm_time_s(d, 1024, 512, 2048, 2) != flops / 100e12);
}

TEST_CASE("profile pricing: the profile's noise slows every measured compute rate",
          "[profile][compute]") {
  Profile p = hand_profile();
  p.kernels = {{MemoryKernel::gelu_forward, 1e6, 1e10}};
  Profile with_noise = p;
  with_noise.noise = 0.25;
  const DeviceRates quiet = device_rates(datasheet_device(), Dtype::bf16, &p);
  const DeviceRates noisy = device_rates(datasheet_device(), Dtype::bf16, &with_noise);
  CHECK(gemm_time_s(noisy, 1024, 512, 2048, 2) ==
        Approx(1.25 * gemm_time_s(quiet, 1024, 512, 2048, 2)));
  CHECK(kernel_time_s(noisy, MemoryKernel::gelu_forward, 1e6, 8e6) == Approx(1.25 * 1e6 / 1e10));
  CHECK(memory_time_s(noisy, 1e9) == Approx(1.25 * 1e9 / 2000e9));
  // Without a profile nothing was measured, and nothing carries noise.
  const DeviceRates datasheet = device_rates(datasheet_device(), Dtype::bf16);
  CHECK(datasheet.memory_bytes_per_s == Approx(3350e9 * 0.9));
}

TEST_CASE("profile pricing: a measured collective takes alpha + bytes / algbw from its fit",
          "[profile][collective]") {
  const Profile p = hand_profile();
  const Cluster c = apply_profile(test::preset_cluster("dgx-h100", 2), p, "hand.json");
  CollectiveOptions with;
  with.profile = &p;
  constexpr int64_t kBytes = 1'000'000'000;

  const CollectiveCost measured =
      collective_cost(c, Collective::all_reduce, kBytes, one_node(8), with);
  CHECK(measured.from_profile);
  CHECK(measured.time_s == 20e-6 + 1e9 / 150e9);
  CHECK(measured.algbw_GBps == Approx(1e9 / (20e-6 + 1e9 / 150e9) / 1e9));

  // send/recv is measured on both levels.
  GroupSpan pair = one_node(2);
  CHECK(collective_cost(c, Collective::send_recv, kBytes, pair, with).time_s == 4e-6 + 1e9 / 300e9);
  pair.level = 1, pair.nodes = 2, pair.max_ranks_per_node = 1;
  CHECK(collective_cost(c, Collective::send_recv, kBytes, pair, with).time_s == 10e-6 + 1e9 / 40e9);

  // Cold input takes the cold-input fit where the profile has one, the other fit where not.
  CollectiveOptions cold = with;
  cold.cold_input = true;
  CHECK(collective_cost(c, Collective::all_reduce, kBytes, one_node(8), cold).time_s ==
        measured.time_s);
  Profile with_cold = p;
  with_cold.collectives.push_back({Collective::all_reduce, 0, 8, 30, 100, {}, true});
  cold.profile = with.profile = &with_cold;
  CHECK(collective_cost(c, Collective::all_reduce, kBytes, one_node(8), cold).time_s ==
        30e-6 + 1e9 / 100e9);
  CHECK(collective_cost(c, Collective::all_reduce, kBytes, one_node(8), with).time_s ==
        measured.time_s);
  with.profile = &p;

  // A forced algorithm is not what calibrate measured: the model prices it.
  CollectiveOptions forced = with;
  forced.all_reduce_algorithm = Algorithm::ring;
  CHECK_FALSE(collective_cost(c, Collective::all_reduce, kBytes, one_node(8), forced).from_profile);
}

TEST_CASE("profile pricing: unmeasured groups fall back to the model on the measured links",
          "[profile][collective]") {
  const Profile p = hand_profile();
  const Cluster c = apply_profile(test::preset_cluster("dgx-h100", 2), p, "hand.json");
  constexpr int64_t kBytes = 8'000'000'000;
  // All-gather over 8 ranks of a node: no fit, so the ring of collective_cost.cpp on NVLink at the
  // send/recv fit's 300 GB/s per device as achieved (no NCCL efficiency factor) and its 4 us LL
  // hop: launch + ring Simple base (8.4 us) + 7 Simple hops (4 us × 3.4 / 0.6, NCCL's ratio) +
  // 7 · (bytes / 8) / 300 GB/s. (Ring Simple beats NVLS here: 5/6 of the bus rate is slower than
  // the ring's 8/7 for all-gather.)
  CollectiveOptions with;
  with.profile = &p;
  const CollectiveCost ag = collective_cost(c, Collective::all_gather, kBytes, one_node(8), with);
  CHECK_FALSE(ag.from_profile);
  CHECK(ag.time_s ==
        Approx((kNcclLaunch_us + 8.4) * 1e-6 + 7 * 4e-6 * 3.4 / 0.6 + 7 * 1e9 / 300e9)
            .epsilon(1e-12));

  // Without the profile, the same cluster's NVLink figure takes NCCL's efficiency.
  const CollectiveCost model = collective_cost(c, Collective::all_gather, kBytes, one_node(8));
  CHECK(model.time_s ==
        Approx((kNcclLaunch_us + 8.4) * 1e-6 + 7 * 4e-6 * 3.4 / 0.6 +
               7 * 1e9 / (300e9 * kNcclScaleUpEfficiency))
            .epsilon(1e-12));
}

TEST_CASE("profile pricing: estimate takes the profile's rates and says which figures it used",
          "[profile][estimate]") {
  Profile p = hand_profile();
  p.gemm = {{4096, 4096, 4096, 400}};  // one shape: every GEMM at 400 TFLOP/s
  const Cluster c = apply_profile(test::preset_cluster("dgx-h100", 2), p, "hand.json");
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(32, 4096);
  ExecutionOptions x;
  x.profile = &p;
  const Estimate e = estimate(m, c, t, test::layout(16, 32, 8, 1), x);

  for (const PassCost* pass : {&e.compute.forward, &e.compute.backward}) {
    CHECK((*pass)[OpKind::matmul].time_s == Approx((*pass)[OpKind::matmul].flops / 400e12));
    CHECK((*pass)[OpKind::memory_bound].time_s ==
          Approx((*pass)[OpKind::memory_bound].bytes / 2000e9));
  }
  // The tp all-reduce over 8 ranks of a node is the measured one.
  bool tp_measured = false;
  for (const CollectiveEstimate& ce : e.collectives)
    if (ce.name() == "tp all_reduce") {
      tp_measured = ce.cost.from_profile;
      CHECK(ce.cost.time_s == 20e-6 + static_cast<double>(ce.action.bytes) / 150e9);
    }
  CHECK(tp_measured);

  const nlohmann::json j = estimate_to_json(e);
  CHECK(j["profile"]["matmul"] == "profile");
  CHECK(j["profile"]["attention"] == "datasheet");
  CHECK(j["profile"]["collectives_from_profile"].get<int>() >= 1);
  CHECK(estimate_to_json(estimate(m, c, t, test::layout(16, 32, 8, 1)))["profile"].is_null());
}

TEST_CASE("profile pricing: estimate prices ZeRO's gathers and buckets as the simulator does",
          "[profile][estimate][zero]") {
  // Warm and cold fits for the dp group of 8 on one node: parameter gathers and a bucket of
  // several layers take the cold fit (reads_cold_input), a ZeRO-3 unit's reduce-scatter the warm
  // one, and each ZeRO reduce-scatter adds its own memory traffic at the profile's 2000 GB/s.
  Profile p = hand_profile();
  p.collectives.push_back({Collective::reduce_scatter, 0, 8, 20, 150, {}});
  p.collectives.push_back({Collective::reduce_scatter, 0, 8, 30, 100, {}, true});
  p.collectives.push_back({Collective::all_gather, 0, 8, 20, 150, {}});
  p.collectives.push_back({Collective::all_gather, 0, 8, 40, 50, {}, true});
  const Cluster c = apply_profile(test::preset_cluster("dgx-h100", 1), p, "hand.json");
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(32, 4096);  // bf16 gradients: 2 bytes a parameter
  ExecutionOptions x;
  x.profile = &p;
  const auto fit_s = [](double alpha_us, double GBps, int64_t bytes) {
    return alpha_us * 1e-6 + static_cast<double>(bytes) / (GBps * 1e9);
  };
  for (int zero : {2, 3}) {
    INFO("zero " << zero);
    const Estimate e = estimate(m, c, t, test::layout(8, 32, 1, 1, 1, zero), x);
    int reductions = 0, gathers = 0;
    for (const CollectiveEstimate& ce : e.collectives) {
      const int64_t bytes = ce.action.bytes;
      const int64_t local = zero_reduce_scatter_local_bytes(bytes, ce.action.params, zero, 8);
      if (ce.action.op == Collective::reduce_scatter) {
        ++reductions;
        // A bucket of several layers reads cold gradients; one layer's were just written.
        CHECK(ce.cost.time_s == Approx(reads_cold_input(ce.action) ? fit_s(30, 100, bytes)
                                                                   : fit_s(20, 150, bytes)));
        CHECK(local > 0);
        CHECK(ce.local_s == Approx(static_cast<double>(local) / 2000e9));
        CHECK(ce.total_s ==
              Approx(static_cast<double>(ce.calls_per_step) * (ce.cost.time_s + ce.local_s)));
      } else if (ce.action.op == Collective::all_gather) {
        ++gathers;
        CHECK(ce.cost.time_s == Approx(fit_s(40, 50, bytes)));
        CHECK(ce.local_s == 0);
      }
    }
    CHECK(reductions > 0);
    CHECK(gathers > 0);
  }
}

}  // namespace
}  // namespace shardplan
