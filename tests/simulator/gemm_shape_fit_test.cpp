// The GEMM shape model (simulator/device_efficiency.h: tiles, split of k, a tile's fixed cost)
// against cuBLAS on one H100: every layer and LM-head GEMM of the Ultra-Scale grid's 1B, 3B and 8B
// at tp 1-16 and micro-batches 1 and 4 (seq 4096), and of a 1.3B GPT at micro-batches 1-16 (seq
// 1024), bf16, as `calibrate` timed them (data/gpu_runs/h100-gemm-shapes-2026-11-26). Attention's
// strided batches are left out: the frameworks of the development set run flash attention.
// Refits the tile's fixed cost (kGemmTileFixedK) together with the two figures that belong to the
// lone GPU rather than to the model (its GEMM rate at boost clock, its fixed cost per kernel):
//     build/tests/test_simulator '[gemm-fit]' -s
#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/profile.h"
#include "core/statistics.h"
#include "simulator/device_efficiency.h"

namespace shardplan {
namespace {

constexpr const char* kRun = SHARDPLAN_SOURCE_DIR "/data/gpu_runs/h100-gemm-shapes-2026-11-26/";

struct TimedGemm {
  int64_t m, n, k;
  double time_s;
};

// calibrate's GEMM table: "m n k op time_us GFLOP/s first-made-by…", one GEMM a line.
std::vector<TimedGemm> unbatched_gemms(const std::string& file) {
  std::ifstream in(kRun + file);
  REQUIRE(in);
  std::vector<TimedGemm> gemms;
  for (std::string line; std::getline(in, line);) {
    std::istringstream row(line);
    TimedGemm g{};
    std::string op;
    double us = 0;
    if (!(row >> g.m >> g.n >> g.k >> op >> us) || line.find("batch of") != std::string::npos)
      continue;
    g.time_s = us * 1e-6;
    gemms.push_back(g);
  }
  return gemms;
}

std::vector<TimedGemm> measured() {
  std::vector<TimedGemm> all;
  for (const char* f : {"calibrate_ultrascale_1b.txt", "calibrate_ultrascale_3b.txt",
                        "calibrate_ultrascale_8b.txt", "calibrate_gpt_xl.txt"}) {
    const std::vector<TimedGemm> g = unbatched_gemms(f);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

// The fitted parameters: the GPU's GEMM rate, a tile's fixed cost (k-steps), a kernel's fixed cost.
using Params = std::array<double, 3>;

DeviceRates rates_of(const Params& p, double memory_bytes_per_s) {
  return DeviceRates{.matmul_flops_per_s = p[0],
                     .memory_bytes_per_s = memory_bytes_per_s,
                     .sm_count = 132,  // H100 SXM5 (NVIDIA H100 whitepaper)
                     .kernel_overhead_s = p[2],
                     .gemm_tile_fixed_k = p[1]};
}

std::vector<double> errors(const std::vector<TimedGemm>& gemms, const DeviceRates& r) {
  std::vector<double> e;
  for (const TimedGemm& g : gemms) e.push_back(gemm_time_s(r, g.m, g.k, g.n, 2) / g.time_s - 1);
  return e;
}

double log_loss(const std::vector<TimedGemm>& gemms, const DeviceRates& r) {
  double sum = 0;
  for (const double e : errors(gemms, r)) sum += std::log1p(e) * std::log1p(e);
  return sum;
}

// Coordinate descent in log space: each parameter scaled up and down by a step that halves
// whenever no move lowers the loss.
Params fit(const std::vector<TimedGemm>& gemms, double memory_bytes_per_s, Params p) {
  double best = log_loss(gemms, rates_of(p, memory_bytes_per_s));
  for (double step = 0.2; step > 0.002;) {
    bool moved = false;
    for (size_t i = 0; i < p.size(); ++i)
      for (const double factor : {1 + step, 1 / (1 + step)}) {
        Params q = p;
        q[i] *= factor;
        const double loss = log_loss(gemms, rates_of(q, memory_bytes_per_s));
        if (loss < best) best = loss, p = q, moved = true;
      }
    if (!moved) step /= 2;
  }
  return p;
}

// The q-quantile of the errors' magnitudes.
double abs_quantile(std::vector<double> errors, double q) {
  for (double& e : errors) e = std::abs(e);
  return quantile(std::move(errors), q);
}

TEST_CASE("GEMM shape model: fitted on cuBLAS's GEMMs on an H100", "[simulator][gemm-fit]") {
  const std::vector<TimedGemm> gemms = measured();
  REQUIRE(gemms.size() > 400);
  // The device copy the calibration measured (profile memory_GBps).
  const double memory =
      read_profile_file(std::string(kRun) + "profile_gpt_xl.json").memory_GBps * 1e9;
  const Params p = fit(gemms, memory, {780e12, 128, 3e-6});
  const std::vector<double> e = errors(gemms, rates_of(p, memory));
  const std::string report = fmt::format(
      "{} GEMMs: {:.0f} TFLOP/s, a tile's fixed cost {:.0f} k-steps (shipped {:.0f}), "
      "{:.1f} us a kernel; |error| median {:.1f}%, 90th percentile {:.1f}%, max {:.1f}%",
      gemms.size(), p[0] / 1e12, p[1], kGemmTileFixedK, p[2] * 1e6, 100 * abs_quantile(e, 0.5),
      100 * abs_quantile(e, 0.9), 100 * abs_quantile(e, 1.0));
  fmt::print("{}\n", report);
  INFO(report);
  CHECK(std::abs(p[1] / kGemmTileFixedK - 1) < 0.05);  // the shipped constant is the fit's
  // The lone GPU's rate at its 1,980 MHz boost clock: above the dev-set fit's 0.70 of the 1,830
  // MHz peak, below the large-GEMM prior's top, 0.82 (shared/fidelity/HOW-OTHERS-MODEL.md) at
  // 1,980.
  CHECK(p[0] > 0.70 * 989.5e12);
  CHECK(p[0] < 0.82 * 989.5e12 * 1980 / 1830);
  // Every shape within 50%, where 256×128 tiles alone priced the skinny ones 4-6× too slow
  // (2048×128×16384: 16 tiles, one wave on 132 SMs at 6% use; measured at 0.38 of the rate).
  CHECK(abs_quantile(e, 0.5) < 0.08);
  CHECK(abs_quantile(e, 0.9) < 0.25);
  CHECK(abs_quantile(e, 1.0) < 0.5);
}

}  // namespace
}  // namespace shardplan
