// Mixed precision on the CPU backend: bf16 weights, activations and gradients with fp32 master
// weights, fp32 Adam moments and an fp32 loss (Micikevicius et al. 2018; Megatron-LM's --bf16), on
// every layout family, against the fp32 single-rank run of the same steps. bf16 keeps 8 bits of
// mantissa, so the runs agree to bf16's precision, not fp32's: the tolerances below are a few
// times the differences measured here (in the comments), far below what a wrong gradient or a
// missed reduction gives (a loss off by 10% or more from step 2 on). Each rank's parameter,
// gradient and optimizer bytes equal the cost model's mixed-precision accounting exactly: 2 + 2 +
// 12 bytes per parameter (ZeRO §3.1), sharded as the layout says.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "core/param_shard.h"
#include "executor/interpreter.h"
#include "executor/param_layout.h"
#include "simulator/memory_model.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/mpi/model_state_check.h"
#include "tests/executor/single_rank_training.h"

namespace shardplan {
namespace {

using test::bf16_training;
using test::kGlobalBatch;
using test::kSteps;
using test::layout;
using test::text;
using test::tiny_model;
using test::world_size;

// Measured on gpt-tiny, 3 steps, every layout below (2026-11-25): losses within 3.0e-5 to 9.1e-5
// relative of fp32's, final master weights within 0.0021 to 0.0022 of the model's norm.
constexpr double kLossTolerance = 1e-3;
constexpr double kParamTolerance = 1e-2;

void check_bf16_layout(Layout l) {
  REQUIRE(l.world() == world_size());
  const Model m = tiny_model();
  const Training t = bf16_training();
  l.num_microbatches = static_cast<int>(kGlobalBatch / (l.micro_batch * l.dp));
  InterpreterSettings settings;
  settings.poison_for_overwrite = true;
  const test::TrainingRun reference = test::train_single_rank(
      m, text(), kSteps, l.micro_batch, static_cast<int>(kGlobalBatch / l.micro_batch), test::kSeq,
      l.recompute, settings.adam, settings.seed);

  INFO(to_string(l) << " in bf16");
  RankInterpreter run(m, t, l, text(), settings);
  double worst_loss = 0;
  for (int step = 0; step < kSteps; ++step) {
    const StepMeasurement s = run.run_step(step);
    const double ref = reference.losses[static_cast<size_t>(step)];
    INFO("step " << step << ": bf16 " << s.loss << ", fp32 " << ref);
    worst_loss = std::max(worst_loss, std::abs(s.loss - ref) / ref);
    CHECK(std::isfinite(s.loss));
    CHECK(std::abs(s.loss - ref) / ref < kLossTolerance);
  }
  const std::vector<float> params = run.gather_full_parameters();
  if (run.program().rank == 0) {
    REQUIRE(params.size() == reference.final_params.size());
    const double error = test::relative_norm_error(params, reference.final_params);
    INFO("worst loss error " << worst_loss << ", parameter error " << error);
    CHECK(error < kParamTolerance);
    // Not fp32 in disguise: bf16 rounding moves the weights.
    CHECK(error > 1e-5);
  }
  test::check_model_state_bytes(m, t, l, run);
}

}  // namespace

TEST_CASE("mixed precision: the model state is 2 + 2 + 12 bytes a parameter", "[interpreter]") {
  const Model m = tiny_model();
  const int64_t params = param_layout(m, whole_model(m)).total;
  const ModelStateBytes b = model_state_bytes(params, params, 0, bf16_training());
  CHECK(b.parameters == 2 * params);
  CHECK(b.gradients == 2 * params);
  CHECK(b.optimizer() == 12 * params);
}

TEST_CASE("mixed precision: dp2, tp2 with sequence parallelism, pp2, cp2", "[interpreter]") {
  if (world_size() != 2) return;
  check_bf16_layout(layout(2, 1, 1));
  Layout sp = layout(1, 2, 1);
  sp.sequence_parallel = true;
  check_bf16_layout(sp);
  Layout pp = layout(1, 1, 2);
  pp.schedule = Schedule::one_f_one_b;
  check_bf16_layout(pp);
  check_bf16_layout(layout(1, 1, 1, 2));
}

TEST_CASE("mixed precision: ZeRO 1, 2 and 3 over dp2, full recompute", "[interpreter]") {
  if (world_size() != 2) return;
  for (int zero = 1; zero <= 3; ++zero) {
    Layout l = layout(2, 1, 1);
    l.zero = zero;
    check_bf16_layout(l);
  }
  Layout full = layout(1, 2, 1);
  full.recompute = Recompute::full;
  check_bf16_layout(full);
}

TEST_CASE("mixed precision: dp2·tp2 with ZeRO-1, pp2·tp2 interleaved", "[world4]") {
  if (world_size() != 4) return;
  Layout dp_tp = layout(2, 2, 1);
  dp_tp.zero = 1;
  check_bf16_layout(dp_tp);
  Layout pp_tp = layout(1, 2, 2);
  pp_tp.vpp = 2;
  pp_tp.schedule = Schedule::interleaved;
  check_bf16_layout(pp_tp);
}

// A checkpoint holds the fp32 master weights: a bf16 run's state loads under another layout and in
// fp32 unchanged, and an fp32 run's loads into bf16 as the master weights.
TEST_CASE("mixed precision: full state loads across layouts and precisions", "[interpreter]") {
  if (world_size() != 2) return;
  Layout zero3 = layout(2, 1, 1);
  zero3.zero = 3;
  Layout zero1 = zero3;
  zero1.zero = 1;
  const Layout tp2 = layout(1, 2, 1);
  const Training bf16 = bf16_training(), fp32 = test::fp32_training();
  test::check_state_round_trip(zero3, tp2, bf16, bf16);
  test::check_state_round_trip(tp2, zero1, bf16, bf16);
  test::check_state_round_trip(zero1, layout(1, 1, 2), bf16, fp32);
  test::check_state_round_trip(zero3, zero3, fp32, bf16);
}

TEST_CASE("mixed precision: another precision is refused, naming the field", "[interpreter]") {
  if (world_size() != 2) return;
  Training t = bf16_training();
  t.grad_dtype = Dtype::fp32;
  CHECK_FALSE(runs_precision(t));
  CHECK(runs_precision(bf16_training()));
  CHECK(runs_precision(test::fp32_training()));
  CHECK_THROWS_WITH(RankInterpreter(tiny_model(), t, layout(2, 1, 1), text(), {}),
                    Catch::Contains("training.dtype") && Catch::Contains("grad_dtype fp32"));
}

}  // namespace shardplan
