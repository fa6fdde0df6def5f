// Transformer Engine's userbuffers overlap of the sequence-parallel collectives with their GEMMs
// (simulator/tp_comm_overlap.h): which collectives, the exposed time of each method counted by
// hand, and a step that overlaps them between the one that runs them whole and its compute.
#include "simulator/tp_comm_overlap.h"

#include <catch2/catch.hpp>

#include "simulator/estimate.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// Parts whose forward GEMMs take `forward_s` and whose backward GEMMs take `backward_s`.
PartsCompute gemm_parts(double forward_s, double backward_s) {
  PartsCompute parts;
  for (auto& c : parts.parts) {
    c.forward[OpKind::matmul].time_s = forward_s;
    c.backward[OpKind::matmul].time_s = backward_s;
  }
  return parts;
}

Action tp_collective(Collective op, Pass pass) {
  return Action{.kind = ActionKind::collective,
                .stream = Stream::tp_comm,
                .pass = pass,
                .op = op,
                .group = Group::tp,
                .parts = part_bit(Part::mlp)};
}

}  // namespace

TEST_CASE("tp overlap: only the tensor-parallel gathers and reduce-scatters, when asked",
          "[tp_overlap]") {
  ExecutionOptions x;
  const Action gather = tp_collective(Collective::all_gather, Pass::forward);
  CHECK_FALSE(tp_overlapped(x, gather));
  x.tp_comm_overlap = true;
  CHECK(tp_overlapped(x, gather));
  CHECK(tp_overlapped(x, tp_collective(Collective::reduce_scatter, Pass::backward)));
  CHECK_FALSE(tp_overlapped(x, tp_collective(Collective::all_reduce, Pass::forward)));
  Action cp = gather;
  cp.group = Group::cp;
  CHECK_FALSE(tp_overlapped(x, cp));
}

TEST_CASE("tp overlap: each method's exposed time, counted by hand", "[tp_overlap]") {
  constexpr int kTp = 4, kSms = 128;
  const auto priced = [&](Collective op, Pass pass, double comm_s, double gemm_s) {
    return tp_overlapped_s(tp_collective(op, pass), comm_s, gemm_parts(gemm_s, gemm_s),
                           Recompute::none, kTp, kSms);
  };
  // Ring exchange (forward all-gather): the GEMM's 3 other chunks cover 3/4 of its 8 ms; 1 SM.
  CHECK(priced(Collective::all_gather, Pass::forward, 1.0, 8.0) == Approx(1.0 / kSms));
  CHECK(priced(Collective::all_gather, Pass::forward, 10.0, 8.0) ==
        Approx(10.0 - 6.0 + 6.0 / kSms));
  // Pipeline (forward reduce-scatter): 4 chunks, the last one's exposed; 16 SMs while it hides.
  CHECK(priced(Collective::reduce_scatter, Pass::forward, 1.0, 8.0) ==
        Approx(0.25 + 0.75 * 16 / kSms));
  CHECK(priced(Collective::reduce_scatter, Pass::forward, 10.0, 8.0) ==
        Approx(4.0 + 6.0 * 16 / kSms));
  // Bulk (backward reduce-scatter): beside the whole weight-gradient GEMM.
  CHECK(priced(Collective::reduce_scatter, Pass::backward, 1.0, 8.0) == Approx(16.0 / kSms));
  CHECK(priced(Collective::reduce_scatter, Pass::backward, 10.0, 8.0) ==
        Approx(2.0 + 8.0 * 16 / kSms));
}

TEST_CASE("tp overlap: a step between the one that runs its collectives whole and its compute",
          "[tp_overlap][estimate]") {
  const Model m = test::preset_model("llama3-70b");
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const Training t = test::training(16, 8192);
  Layout l = test::layout(8, 16, 8, 1);
  l.sequence_parallel = true;
  ExecutionOptions x;
  const Estimate whole = estimate(m, c, t, l, x);
  x.tp_comm_overlap = true;
  const Estimate overlapped = estimate(m, c, t, l, x);
  CHECK(overlapped.step_time_s < whole.step_time_s);
  CHECK(overlapped.time.microbatch_comm_s < whole.time.microbatch_comm_s / 2);
  CHECK(overlapped.step_time_s > overlapped.time.compute_s);
}
