// The interpreter on the CUDA backend against the CPU backend, layout by layout: gpt-tiny trained
// for 3 steps from the same initial values on the same data gives per-step losses within 1e-4
// relative and final parameters (the whole model, gathered) within 1e-4 of the CPU run's norm
// (fp32 sums in other orders, over a few steps of Adam, which amplifies the rounding of tiny
// gradients: see tests/executor/mpi/interpreter_test.cpp). Parameters, gradients and optimizer
// state take the same bytes of device memory as of host memory. 1-rank layouts in the 1-rank
// instance, 2-rank ones in the 2-rank instance; each needs a GPU per rank and is skipped without.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "core/presets.h"
#include "executor/interpreter.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor_cuda/cuda_test_device.h"

namespace shardplan {
namespace {

using test::kGlobalBatch;
using test::kSteps;
using test::layout;
using test::world_size;
constexpr double kTolerance = 1e-4;

struct Run {
  std::vector<double> losses;
  std::vector<float> params;  // rank 0: the whole model's
  MemoryBytes at_peak;
};

Run train(const Layout& l, Backend backend) {
  static const Model m = test::tiny_model();
  InterpreterSettings settings;
  settings.backend = backend;
  settings.poison_for_overwrite = true;  // a kernel reading an output before writing it shows
  RankInterpreter interpreter(m, test::fp32_training(), l, test::text(), settings);
  Run r;
  for (int step = 0; step < kSteps; ++step) r.losses.push_back(interpreter.run_step(step).loss);
  r.params = interpreter.gather_full_parameters();
  r.at_peak = interpreter.allocator().at_peak();
  return r;
}

void check_layout(Layout l) {
  REQUIRE(l.world() == world_size());
  l.num_microbatches = static_cast<int>(kGlobalBatch / (l.micro_batch * l.dp));
  INFO(to_string(l));
  const Run cpu = train(l, Backend::cpu), gpu = train(l, Backend::cuda);
  for (int step = 0; step < kSteps; ++step) {
    INFO("step " << step);
    const double want = cpu.losses[static_cast<size_t>(step)];
    CHECK(std::abs(gpu.losses[static_cast<size_t>(step)] - want) <= kTolerance * std::abs(want));
  }
  REQUIRE(gpu.params.size() == cpu.params.size());
  if (!cpu.params.empty()) CHECK(test::relative_norm_error(gpu.params, cpu.params) < kTolerance);
  for (MemoryCategory c :
       {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer})
    CHECK(gpu.at_peak[c] == cpu.at_peak[c]);
}

TEST_CASE("cuda interpreter: one rank, each recompute mode", "[cuda]") {
  if (world_size() != 1) return;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Layout l = layout(1, 1, 1);
    l.recompute = r;
    l.micro_batch = 2;  // two micro-batches: gradients accumulate
    check_layout(l);
  }
}

TEST_CASE("cuda interpreter: two ranks, every parallelism", "[cuda]") {
  if (world_size() != 2) return;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(2);
  Layout sp = layout(1, 2, 1);
  sp.sequence_parallel = true;
  Layout zero1 = layout(2, 1, 1), zero2 = zero1, zero3 = zero1;
  zero1.zero = 1;
  zero2.zero = 2;
  zero3.zero = 3;
  Layout interleaved = layout(1, 1, 2);
  interleaved.vpp = 2;
  interleaved.schedule = Schedule::interleaved;
  for (const Layout& l : {layout(2, 1, 1), layout(1, 2, 1), sp, layout(1, 1, 2), interleaved,
                          layout(1, 1, 1, 2), zero1, zero2, zero3})
    check_layout(l);
}

}  // namespace
}  // namespace shardplan
