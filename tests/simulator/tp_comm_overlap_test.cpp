// Transformer Engine's userbuffers overlap of the sequence-parallel collectives with their GEMMs
// (simulator/tp_comm_overlap.h): which collectives, the exposed time of each method counted by
// hand, and a step that overlaps them between the one that runs them whole and its compute.
#include "simulator/tp_comm_overlap.h"

#include <catch2/catch.hpp>

#include "simulator/estimate.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// Every part's linears: forward, dgrad and wgrad GEMMs of `gemm_s` each.
PartsCompute gemm_parts(double gemm_s) {
  PartsCompute parts;
  for (PartLinears& l : parts.linears) l.first = l.last = {gemm_s, gemm_s, gemm_s};
  return parts;
}

Action tp_collective(Collective op, Pass pass, Part part = Part::mlp) {
  return Action{.kind = ActionKind::collective,
                .stream = Stream::tp_comm,
                .pass = pass,
                .op = op,
                .group = Group::tp,
                .parts = part_bit(part),
                .layer_begin = 3,
                .layer_end = 4};
}

}  // namespace

TEST_CASE("tp overlap: only a layer's tensor-parallel gathers and reduce-scatters, in NVLink",
          "[tp_overlap]") {
  Training x;
  const GroupSpan nvlink{.group = Group::tp, .size = 8, .level = 0, .nodes = 1};
  const Action gather = tp_collective(Collective::all_gather, Pass::forward);
  CHECK_FALSE(tp_overlapped(x, gather, nvlink));
  x.tp_comm_overlap = true;
  CHECK(tp_overlapped(x, gather, nvlink));
  CHECK(tp_overlapped(x, tp_collective(Collective::reduce_scatter, Pass::backward), nvlink));
  CHECK_FALSE(tp_overlapped(x, tp_collective(Collective::all_reduce, Pass::forward), nvlink));
  // Not the LM head's gather (no TE module), nor an MoE layer's beyond its all-to-alls.
  Action head = tp_collective(Collective::all_gather, Pass::forward, Part::head);
  head.layer_begin = head.layer_end = 32;
  CHECK_FALSE(tp_overlapped(x, head, nvlink));
  CHECK_FALSE(tp_overlapped(x, tp_collective(Collective::all_gather, Pass::forward, Part::experts),
                            nvlink));
  Action cp = gather;
  cp.group = Group::cp;
  CHECK_FALSE(tp_overlapped(x, cp, nvlink));
  GroupSpan across = nvlink;
  across.level = 1;  // userbuffers run within one NVLink domain
  CHECK_FALSE(tp_overlapped(x, gather, across));
}

TEST_CASE("tp overlap: each method's exposed time, counted by hand", "[tp_overlap]") {
  constexpr int kTp = 4, kSms = 128;
  const auto priced = [&](Collective op, Pass pass, Part part, double comm_s, double gemm_s,
                          bool split = false) {
    Layout l;
    l.tp = kTp;
    if (split) l.schedule = Schedule::zb_h1;  // W deferred: no wgrad beside the collective
    return tp_overlapped_s(tp_collective(op, pass, part), comm_s, gemm_parts(gemm_s), l, kSms);
  };
  const Pass fwd = Pass::forward, bwd = Pass::backward;
  const Collective ag = Collective::all_gather, rs = Collective::reduce_scatter;
  // Ring exchange (forward gather): 3 of the GEMM's 4 chunks cover it; 1 SM while it hides.
  CHECK(priced(ag, fwd, Part::mlp, 1.0, 8.0) == Approx(1.0 / kSms));
  CHECK(priced(ag, fwd, Part::mlp, 10.0, 8.0) == Approx(4.0 + 6.0 / kSms));
  // Pipeline (forward reduce-scatter after fc2): 4 chunks, the last exposed; fc2 on 128 − 16 SMs.
  CHECK(priced(rs, fwd, Part::mlp, 1.0, 8.0) == Approx(0.25 + 8.0 * 16 / 112));
  CHECK(priced(rs, fwd, Part::mlp, 10.0, 8.0) == Approx(4.0 + 8.0 * 16 / 112));
  // ... after the output projection, 24 SMs.
  CHECK(priced(rs, fwd, Part::attention_core, 1.0, 8.0) == Approx(0.25 + 8.0 * 24 / 104));
  // Bulk (backward reduce-scatter beside fc1's wgrad, 4 SMs); none under a split backward.
  CHECK(priced(rs, bwd, Part::mlp, 1.0, 8.0) == Approx(4.0 / kSms));
  CHECK(priced(rs, bwd, Part::mlp, 10.0, 8.0) == Approx(2.0 + 8.0 * 4 / kSms));
  CHECK(priced(rs, bwd, Part::mlp, 1.0, 8.0, true) == Approx(1.0));
  // Backward gather: the output gradient by ring beside fc2's dgrad, fc1's input in bulk beside
  // fc1's dgrad (2 SMs), half the bytes each.
  CHECK(priced(ag, bwd, Part::mlp, 2.0, 8.0) == Approx(1.0 / kSms + 2.0 / kSms));
}

TEST_CASE("tp overlap: a step between the one that runs its collectives whole and its compute",
          "[tp_overlap][estimate]") {
  const Model m = test::preset_model("llama3-70b");
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const Training t = test::training(16, 8192);
  Layout l = test::layout(8, 16, 8, 1);
  l.sequence_parallel = true;
  Training overlapping = t;
  overlapping.tp_comm_overlap = true;
  const Estimate whole = estimate(m, c, t, l);
  const Estimate overlapped = estimate(m, c, overlapping, l);
  CHECK(overlapped.step_time_s < whole.step_time_s);
  CHECK(overlapped.time.microbatch_comm_s < whole.time.microbatch_comm_s / 2);
  CHECK(overlapped.step_time_s > overlapped.time.compute_s);
}
