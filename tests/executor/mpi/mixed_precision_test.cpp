// Mixed precision on the CPU backend: bf16 weights, activations and gradients with fp32 master
// weights, fp32 Adam moments and an fp32 loss (Micikevicius et al. 2018; Megatron-LM's --bf16), on
// every layout family, against the fp32 single-rank run of the same steps. bf16 keeps 8 bits of
// mantissa, so the runs agree to bf16's precision, not fp32's: the tolerances below are a few
// times the differences measured here (in the comments), below what a missed reduction gives
// (with the dp all-reduce dropped: losses 7.1e-3 off, parameters 0.032). Each rank's parameter,
// gradient and optimizer bytes equal the cost model's mixed-precision accounting exactly: 2 + 2 +
// 12 bytes per parameter (ZeRO §3.1), sharded as the layout says.
#include <mpi.h>

#include <catch2/catch.hpp>

#include "executor/interpreter.h"
#include "executor/state/param_layout.h"
#include "simulator/memory_model.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/mpi/single_rank_check.h"

namespace shardplan {
namespace {

using test::bf16_training;
using test::layout;
using test::text;
using test::tiny_model;
using test::world_size;

// Measured on gpt-tiny, 3 steps, every layout below (2026-11-25): losses within 3.0e-5 to 9.1e-5
// relative of fp32's, final master weights within 0.0021 to 0.0022 of the model's norm.
constexpr double kLossTolerance = 1e-3;
constexpr double kParamTolerance = 1e-2;

void check_bf16_layout(const Layout& l) {
  // bf16 rounding moves the weights away from fp32's: a run in fp32 by mistake fails.
  test::check_against_single_rank(
      l, bf16_training(), {.loss = kLossTolerance, .params = kParamTolerance, .min_params = 1e-5});
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

TEST_CASE("mixed precision: dp2, tp2 with sequence parallelism, pp2 (1F1B and ZB-H1), cp2",
          "[interpreter]") {
  if (world_size() != 2) return;
  check_bf16_layout(layout(2, 1, 1));
  Layout sp = layout(1, 2, 1);
  sp.sequence_parallel = true;
  check_bf16_layout(sp);
  Layout pp = layout(1, 1, 2);
  pp.schedule = Schedule::one_f_one_b;
  check_bf16_layout(pp);
  pp.schedule = Schedule::zb_h1;
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
