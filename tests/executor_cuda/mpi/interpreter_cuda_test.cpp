// The interpreter on the CUDA backend against the CPU backend, layout by layout, in fp32 and in
// mixed precision (bf16 weights, activations and gradients, fp32 master weights: Megatron-LM's
// --bf16). gpt-tiny trained for 3 steps from the same initial values on the same data gives
// per-step losses and final parameters (the whole model, gathered: the master weights in bf16)
// close to the CPU run's. fp32: within 1e-4 relative and of the parameters' norm (fp32 sums in
// other orders, over a few steps of Adam, which amplifies the rounding of tiny gradients: see
// tests/executor/mpi/interpreter_test.cpp). bf16: the tolerances mixed_precision_test holds the
// CPU's bf16 run to against fp32 (1e-3 and 1e-2, a few times the differences measured there), as
// each backend's bf16 run is within bf16's precision of the fp32 one; and the CUDA run is bf16,
// not fp32 in disguise: its parameters differ from the fp32 run's. Parameters, gradients and
// optimizer state take the same bytes of device memory as of host memory. 1-rank layouts in the
// 1-rank instance, 2-rank ones in the 2-rank instance; each needs a GPU per rank and is skipped
// without.
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

constexpr test::Tolerances kFp32{.loss = 1e-4, .params = 1e-4}, kBf16{.loss = 1e-3, .params = 1e-2};

struct Run {
  std::vector<double> losses;
  std::vector<float> params;  // rank 0: the whole model's
  MemoryBytes at_peak;
};

Run train(const Layout& l, const Training& t, Backend backend) {
  static const Model m = test::tiny_model();
  InterpreterSettings settings;
  settings.backend = backend;
  settings.poison_for_overwrite = true;  // a kernel reading an output before writing it shows
  RankInterpreter interpreter(m, t, l, test::text(), settings);
  Run r;
  for (int step = 0; step < kSteps; ++step) r.losses.push_back(interpreter.run_step(step).loss);
  r.params = interpreter.gather_full_parameters();
  r.at_peak = interpreter.allocator().at_peak();
  return r;
}

void check_layout(Layout l, const Training& t) {
  REQUIRE(l.world() == world_size());
  l.num_microbatches = static_cast<int>(kGlobalBatch / (l.micro_batch * l.dp));
  const bool bf16 = t.dtype == Dtype::bf16;
  const test::Tolerances tolerance = bf16 ? kBf16 : kFp32;
  INFO(to_string(l) << " in " << enum_name(t.dtype, kDtypeNames));
  const Run cpu = train(l, t, Backend::cpu), gpu = train(l, t, Backend::cuda);
  // Every rank trains (the interpreter is collective); rank 0 holds the parameters.
  const Run fp32 = bf16 ? train(l, test::fp32_training(), Backend::cpu) : Run{};
  for (int step = 0; step < kSteps; ++step) {
    const double want = cpu.losses[static_cast<size_t>(step)];
    const double error = std::abs(gpu.losses[static_cast<size_t>(step)] - want) / std::abs(want);
    INFO("step " << step << ": loss error " << error << ", tolerance " << tolerance.loss);
    CHECK(error <= tolerance.loss);
  }
  REQUIRE(gpu.params.size() == cpu.params.size());
  if (!cpu.params.empty()) {
    const double error = test::relative_norm_error(gpu.params, cpu.params);
    INFO("parameter error " << error << ", tolerance " << tolerance.params);
    CHECK(error < tolerance.params);
    if (bf16)  // bf16 rounding moves the weights away from fp32's
      CHECK(test::relative_norm_error(gpu.params, fp32.params) > 1e-5);
  }
  for (MemoryCategory c :
       {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer})
    CHECK(gpu.at_peak[c] == cpu.at_peak[c]);
}

TEST_CASE("cuda interpreter: one rank, each recompute mode, fp32 and bf16", "[cuda]") {
  if (world_size() != 1) return;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(1);
  for (const Training& t : {test::fp32_training(), test::bf16_training()})
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      Layout l = layout(1, 1, 1);
      l.recompute = r;
      l.micro_batch = 2;  // two micro-batches: gradients accumulate
      check_layout(l, t);
    }
}

TEST_CASE("cuda interpreter: two ranks, every parallelism, fp32 and bf16", "[cuda]") {
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
  for (const Training& t : {test::fp32_training(), test::bf16_training()})
    for (const Layout& l : {layout(2, 1, 1), layout(1, 2, 1), sp, layout(1, 1, 2), interleaved,
                            layout(1, 1, 1, 2), zero1, zero2, zero3})
      check_layout(l, t);
}

}  // namespace
}  // namespace shardplan
