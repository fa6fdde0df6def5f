// The MPI interpreter against the single-rank run: for every layout family the per-step losses and
// the final parameters (gathered into the whole model's flat layout) equal one rank's training of
// the same steps within 1e-5 relative, and each rank's parameter, gradient and optimizer bytes
// equal the cost model's (simulator/memory_model.h) exactly, uneven pipeline stages too. 2-rank
// layouts run in the default instance, 4-rank ones ("[world4]") in the 4-rank instance, 8-rank ones
// ("[world8]") in the 8-rank one. A checkpoint's full state loads under another layout unchanged.
#include "executor/interpreter.h"

#include <mpi.h>

#include <catch2/catch.hpp>
#include <string>

#include "core/presets.h"
#include "core/stage_split.h"
#include "executor/state/param_layout.h"
#include "tests/core/odd_model.h"
#include "tests/executor/mpi/interpreter_fixtures.h"
#include "tests/executor/mpi/single_rank_check.h"

namespace shardplan {
namespace {

using test::fp32_training;
using test::kSteps;
using test::layout;
using test::tiny_model;
using test::world_size;

// Trains `m` (gpt-tiny unless given) under `l` for kSteps on the world and checks it against the
// single-rank run: fp32 sums in another order, within 1e-5.
void check_layout(const Layout& l, const Model& m = tiny_model()) {
  test::check_against_single_rank(l, fp32_training(), {.loss = 1e-5, .params = 1e-5}, m);
}

// check_layout with the training's own reductions (Training::grad_bucket_elements,
// zero1_whole_all_reduce).
void check_layout_trained(const Layout& l, const Training& t) {
  test::check_against_single_rank(l, t, {.loss = 1e-5, .params = 1e-5}, tiny_model());
}

// check_layout under ZeRO-1, 2 and 3.
void check_zero_stages(Layout l, const Model& m = tiny_model()) {
  for (int zero = 1; zero <= 3; ++zero) {
    INFO("zero " << zero);
    l.zero = zero;
    check_layout(l, m);
  }
}

}  // namespace

TEST_CASE("interpreter: full state loads under another layout", "[interpreter]") {
  if (world_size() != 2) return;
  Layout zero3 = layout(2, 1, 1);
  zero3.zero = 3;
  Layout zero1 = zero3;
  zero1.zero = 1;
  test::check_state_round_trip(zero3, layout(1, 1, 2));
  test::check_state_round_trip(layout(1, 1, 2), layout(1, 2, 1));
  test::check_state_round_trip(layout(1, 2, 1), zero1);
  Layout cp_zero1 = layout(1, 1, 1, 2);
  cp_zero1.zero = 1;
  test::check_state_round_trip(zero3, cp_zero1);
  test::check_state_round_trip(cp_zero1, layout(1, 1, 1, 2));
  test::check_state_round_trip(layout(1, 1, 1, 2), layout(1, 1, 2));
}

TEST_CASE("interpreter: dp2 equals one rank", "[interpreter]") {
  if (world_size() != 2) return;
  check_layout(layout(2, 1, 1));
}

TEST_CASE("interpreter: tp2, tp2 with sequence parallelism", "[interpreter]") {
  if (world_size() != 2) return;
  Layout l = layout(1, 2, 1);
  check_layout(l);
  l.sequence_parallel = true;
  check_layout(l);
}

TEST_CASE("interpreter: pp2 under gpipe, 1f1b and interleaved", "[interpreter]") {
  if (world_size() != 2) return;
  Layout l = layout(1, 1, 2);
  l.schedule = Schedule::gpipe;
  check_layout(l);
  l.schedule = Schedule::one_f_one_b;
  check_layout(l);
  l.schedule = Schedule::interleaved;
  l.vpp = 2;
  check_layout(l);
}

// Stages of uneven layer counts (core/stage_split.h): test::odd_model's 3 layers split 2 + 1 (the
// balanced split), gpt-tiny's 4 split 1 + 3 under 1F1B and GPipe, and interleaved chunks of which
// the first holds only the embedding or the last only the loss, as Megatron-LM allows.
TEST_CASE("interpreter: pp2 with uneven stages under 1f1b, gpipe and interleaved",
          "[interpreter]") {
  if (world_size() != 2) return;
  Layout l = layout(1, 1, 2);
  l.stages = {2, 1};
  check_layout(l, test::odd_model());
  l.stages = {1, 3};
  check_layout(l);
  l.schedule = Schedule::gpipe;
  check_layout(l);
  l.schedule = Schedule::interleaved;
  l.vpp = 2;
  l.stages = {0, 2, 1, 1};
  check_layout(l);
  l.stages = {2, 1, 1, 0};
  check_layout(l);
}

TEST_CASE("interpreter: full state loads to and from uneven stages", "[interpreter]") {
  if (world_size() != 2) return;
  Layout uneven = layout(1, 1, 2);
  uneven.stages = {1, 3};
  Layout other = uneven;
  other.stages = {3, 1};
  test::check_state_round_trip(uneven, layout(1, 2, 1));
  test::check_state_round_trip(uneven, other);
  test::check_state_round_trip(layout(1, 1, 2), other);
}

// tp2·sp has dp = cp = 1: a one-member zero group, a program without gathers or dp reductions.
// test::odd_model's units do not divide over dp2: padded pieces, staged collectives under
// ZeRO-1/2, padded gathered units under ZeRO-3.
TEST_CASE("interpreter: ZeRO 1, 2 and 3 over dp2 (padded pieces too), and with tp2·sp",
          "[interpreter]") {
  if (world_size() != 2) return;
  check_zero_stages(layout(2, 1, 1));
  check_zero_stages(layout(2, 1, 1), test::odd_model());
  Layout tp = layout(1, 2, 1);
  tp.sequence_parallel = true;
  check_zero_stages(tp);
}

TEST_CASE("interpreter: pp2 under ZB-H1 and ZB-H2, their weight gradients after the backward",
          "[interpreter]") {
  if (world_size() != 2) return;
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2})
    for (const Recompute r : {Recompute::none, Recompute::selective}) {
      INFO(enum_name(s, kScheduleNames) << " " << enum_name(r, kRecomputeNames));
      Layout l = layout(1, 1, 2);
      l.schedule = s;
      l.recompute = r;
      check_layout(l);
    }
}

TEST_CASE("interpreter: pp2 under ZB-V, its two chunks in a V handed over on rank 1, even or not",
          "[interpreter]") {
  if (world_size() != 2) return;
  for (const Recompute r : {Recompute::none, Recompute::selective}) {
    INFO(enum_name(r, kRecomputeNames));
    Layout l = layout(1, 1, 2);
    l.schedule = Schedule::zb_v;
    l.vpp = 2;
    l.recompute = r;
    check_layout(l);
    // Rank 0 holds the embedding with two layers and the head alone; rank 1 one layer each side.
    l.stages = {2, 1, 1, 0};
    check_layout(l);
  }
  Layout v = layout(1, 1, 2);
  v.schedule = Schedule::zb_v;
  v.vpp = 2;
  test::check_state_round_trip(v, layout(1, 2, 1));
  test::check_state_round_trip(layout(1, 1, 2), v);
}

TEST_CASE("interpreter: every recompute mode (tp2·sp, pp2, dp2 with ZeRO-3)", "[interpreter]") {
  if (world_size() != 2) return;
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    INFO(enum_name(r, kRecomputeNames));
    Layout tp = layout(1, 2, 1);
    tp.recompute = r;
    tp.sequence_parallel = true;
    check_layout(tp);
    Layout pp = layout(1, 1, 2);
    pp.recompute = r;
    check_layout(pp);
    Layout zero3 = layout(2, 1, 1);
    zero3.recompute = r;
    zero3.zero = 3;
    check_layout(zero3);
  }
}

TEST_CASE("interpreter: cp2 under every recompute mode", "[interpreter]") {
  if (world_size() != 2) return;
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    INFO(enum_name(r, kRecomputeNames));
    Layout l = layout(1, 1, 1, 2);
    l.recompute = r;
    check_layout(l);
  }
}

TEST_CASE("interpreter: ZeRO 1, 2 and 3 over cp2", "[interpreter]") {
  if (world_size() != 2) return;
  check_zero_stages(layout(1, 1, 1, 2));
}

TEST_CASE("interpreter: dp2·cp2, tp2·cp2 with sequence parallelism, pp2·cp2", "[world4]") {
  if (world_size() != 4) return;
  check_layout(layout(2, 1, 1, 2));
  Layout tp_cp = layout(1, 2, 1, 2);
  tp_cp.sequence_parallel = true;
  check_layout(tp_cp);
  check_layout(layout(1, 1, 2, 2));
}

TEST_CASE("interpreter: dp2·tp2, dp2·pp2, tp2·pp2", "[world4]") {
  if (world_size() != 4) return;
  check_layout(layout(2, 2, 1));
  Layout dp_pp = layout(2, 1, 2);
  dp_pp.zero = 1;
  check_layout(dp_pp);
  check_layout(layout(1, 2, 2));
}

TEST_CASE("interpreter: ZeRO-3 over dp2·pp2 (interleaved too), dp2·tp2 with sequence parallelism",
          "[world4]") {
  if (world_size() != 4) return;
  Layout dp_pp = layout(2, 1, 2);
  dp_pp.zero = 3;
  check_layout(dp_pp);
  dp_pp.schedule = Schedule::interleaved;
  dp_pp.vpp = 2;
  check_layout(dp_pp);
  Layout dp_tp = layout(2, 2, 1);
  dp_tp.sequence_parallel = true;
  dp_tp.zero = 3;
  check_layout(dp_tp);
}

TEST_CASE(
    "interpreter: ZB-H1 and ZB-H2 over pp4, dp2·pp2 under ZeRO-1, tp2·pp2 with sequence "
    "parallelism, ZB-V over pp4 and dp2·pp2",
    "[world4]") {
  if (world_size() != 4) return;
  for (const Schedule s : {Schedule::zb_h1, Schedule::zb_h2}) {
    INFO(enum_name(s, kScheduleNames));
    Layout pp = layout(1, 1, 4);
    pp.schedule = s;
    check_layout(pp);
  }
  Layout dp_pp = layout(2, 1, 2);
  dp_pp.schedule = Schedule::zb_h1;
  dp_pp.zero = 1;
  check_layout(dp_pp);
  // ZB-V over pp4: 8 virtual stages of gpt-tiny's 4 layers, rank 0 holding the first and the
  // last, and over dp2·pp2 under ZeRO-1.
  Layout v = layout(1, 1, 4);
  v.schedule = Schedule::zb_v;
  v.vpp = 2;
  v.stages = {1, 0, 1, 0, 0, 1, 0, 1};
  check_layout(v);
  dp_pp.schedule = Schedule::zb_v;
  dp_pp.vpp = 2;
  check_layout(dp_pp);
  Layout tp_pp = layout(1, 2, 2);
  tp_pp.schedule = Schedule::zb_h1;
  tp_pp.sequence_parallel = true;
  check_layout(tp_pp);
}

TEST_CASE("interpreter: dp2·pp2 reduced as nanotron and DDP do: ZeRO-1 whole, small buckets",
          "[world4]") {
  if (world_size() != 4) return;
  Layout l = layout(2, 1, 2);
  Training t = fp32_training();
  t.grad_bucket_elements = 5'000;  // a bucket or two per layer of gpt-tiny
  check_layout_trained(l, t);
  l.zero = 1;
  t.zero1_whole_all_reduce = true;  // the tied embedding's pieces still summed over dp first
  check_layout_trained(l, t);
}

TEST_CASE("interpreter: dp2·pp2 with uneven stages under ZeRO-1", "[world4]") {
  if (world_size() != 4) return;
  Layout l = layout(2, 1, 2);
  l.zero = 1;
  l.stages = {3, 1};
  check_layout(l);
}

// Issue 22's case: a 28-layer model over pp=8, the balanced split 3,3,4,4,4,4,3,3 (8-rank
// instance).
TEST_CASE("interpreter: 28 layers over pp8, uneven", "[world8]") {
  if (world_size() != 8) return;
  Model m = tiny_model();
  m.num_layers = 28;
  Layout l = layout(1, 1, 8);
  l.stages = balanced_split(m.num_layers, l.pp);
  REQUIRE(l.stages == std::vector<int>{3, 3, 4, 4, 4, 4, 3, 3});
  check_layout(l, m);
}

TEST_CASE("interpreter: ZeRO 1, 2 and 3 over dp2·cp2 with padded pieces", "[world4]") {
  if (world_size() != 4) return;
  check_zero_stages(layout(2, 1, 1, 2), test::odd_model());
}

}  // namespace shardplan
