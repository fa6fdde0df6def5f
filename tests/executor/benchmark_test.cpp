// Measurements, not checks (hidden tag: run with `test_executor "[.benchmark]"`): this CPU's
// single-thread Eigen fp32 GEMM rate at a few sizes, and the rate gpt-small's matmuls reach inside
// one single-rank training step, as a fraction of the best GEMM rate.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <vector>

#include "core/presets.h"
#include "single_rank_training.h"

using namespace shardplan;

namespace {

// Best of `reps` timings of c = a·bᵀ for a [m, k], b [n, k] (the layers' forward shape), in FLOP
// per second of the thread's CPU time (the machine may be shared; see MatmulStats).
double gemm_rate(int64_t m, int64_t n, int64_t k, int reps) {
  TensorAllocator alloc;
  Buffer<float> a = alloc.allocate<float>(MemoryCategory::buffers, m * k, "a");
  Buffer<float> b = alloc.allocate<float>(MemoryCategory::buffers, n * k, "b");
  Buffer<float> c = alloc.allocate<float>(MemoryCategory::buffers, m * n, "c");
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.1f;
  for (int64_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.1f;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    MatmulStats s{.cpu_time = true};
    gemm<float>(view(c.data(), m, n), view(static_cast<const float*>(a.data()), m, k), Op::none,
                view(static_cast<const float*>(b.data()), n, k), Op::transpose,
                Accumulate::overwrite, &s);
    best = std::max(best, s.flop_per_cpu_s());
  }
  return best;
}

// The best rate over square sizes and gpt-small's layer shapes at 4 × 256 tokens (qkv, fc1, fc2).
double best_gemm_rate(bool print) {
  double peak = 0;
  const std::array<std::array<int64_t, 3>, 7> shapes{{{256, 256, 256},
                                                      {512, 512, 512},
                                                      {1024, 1024, 1024},
                                                      {2048, 2048, 2048},
                                                      {1024, 768, 256},
                                                      {1024, 1024, 256},
                                                      {1024, 256, 1024}}};
  for (auto [m, n, k] : shapes) {
    const double r = gemm_rate(m, n, k, m >= 2048 ? 3 : 10);
    peak = std::max(peak, r);
    if (print) std::printf("GEMM %4ld x %4ld x %4ld: %6.1f GFLOP/s\n", m, n, k, r / 1e9);
  }
  return peak;
}

}  // namespace

TEST_CASE("benchmark: Eigen fp32 GEMM rate, one thread", "[.benchmark]") {
  std::printf("Eigen %d.%d.%d, SIMD: %s\n", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
              EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse());
  CHECK(best_gemm_rate(true) > 0);
}

TEST_CASE("benchmark: gpt-small single-rank step, matmul rate against the GEMM rate",
          "[.benchmark]") {
  // Rounds of (best GEMM rate, then a short training run), each round's ratio taken within it: a
  // shared machine's speed drifts by tens of percent over a minute, which a single ratio of two
  // measurements taken apart would carry (seen here: 49% and 71% in two runs a minute apart).
  const Model m = load_model("gpt-small");
  const TextTokens text =
      load_text_tokens(std::string(SHARDPLAN_SOURCE_DIR) + "/" + kDefaultTextFile, m.max_seq + 1);
  const int rounds = 5, steps = 2;
  std::vector<double> ratios;
  for (int round = 0; round < rounds; ++round) {
    const double peak = best_gemm_rate(false);
    const test::TrainingRun run =
        test::train_single_rank(m, text, steps, 4, 1, m.max_seq, Recompute::none, AdamConfig{}, 1);
    const MatmulStats& mm = run.matmul;
    ratios.push_back(mm.flop_per_cpu_s() / peak);
    std::printf(
        "round %d: gpt-small, 4 x %ld tokens: %.3f s/step CPU; matmuls %.1f GFLOP/step at %.1f "
        "GFLOP/s per CPU second = %.0f%% of the best GEMM rate (%.1f GFLOP/s) [%.1f GFLOP/s "
        "wall]; %.0f%% of the CPU time in matmuls; peak memory %.1f MiB\n",
        round + 1, m.max_seq, run.step_cpu_seconds / steps, mm.flops / steps / 1e9,
        mm.flop_per_cpu_s() / 1e9, 100 * ratios.back(), peak / 1e9, mm.flop_per_s() / 1e9,
        100 * mm.cpu_seconds / run.step_cpu_seconds,
        static_cast<double>(run.peak_bytes) / (1 << 20));
    CHECK(run.losses.size() == steps);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("matmuls in the step against the best GEMM rate: median %.0f%%, range %.0f-%.0f%%\n",
              100 * ratios[rounds / 2], 100 * ratios.front(), 100 * ratios.back());
}
