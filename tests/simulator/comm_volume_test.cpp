// The communication of a rank's program as the estimate reads it (core/schedule_fold.h): bytes
// per step against the ZeRO paper's and Megatron-LM's closed forms, frequencies and windows.
#include "simulator/comm_volume.h"

#include <catch2/catch.hpp>

#include "core/schedule_fold.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// One distinct communication action of a program and its calls per step.
struct Comm {
  Action action;
  int64_t calls = 0;  // per step
  bool per_microbatch = false;
  int64_t calls_per_microbatch = 0;
};

std::vector<Comm> collectives(const Model& m, const Training& t, const Layout& l, int stage = 0) {
  RankCoord c;
  c.pp = stage;
  std::vector<Comm> out;
  for (const FoldedAction& f : fold_program(m, t, l, rank_of(l, c))) {
    const ActionKind k = f.action.kind;
    if (k == ActionKind::compute || k == ActionKind::optimizer_step || k == ActionKind::recv)
      continue;
    out.push_back({f.action, f.per_microbatch * l.num_microbatches + f.per_step,
                   f.per_microbatch > 0, f.per_microbatch});
  }
  return out;
}

// The calls of one kind ("tp all_reduce", "grad_reduce dp all_reduce"), summed over its entries.
Comm find(const std::vector<Comm>& calls, std::string_view name) {
  Comm sum;
  for (const Comm& c : calls)
    if (action_kind_name(c.action) == name) {
      sum.action = c.action;
      sum.calls += c.calls;
      sum.per_microbatch = c.per_microbatch;
      sum.calls_per_microbatch += c.calls_per_microbatch;
    }
  return sum;
}

double volume(const Comm& c, int n) {
  return volume_bytes(c.action.op, c.action.bytes, n, c.calls);
}

// Bytes one rank sends per step over the data-parallel collectives.
double data_parallel_volume(const std::vector<Comm>& calls, int n) {
  double sum = 0;
  for (const Comm& c : calls)
    if (c.action.group == Group::dp) sum += volume(c, n);
  return sum;
}

}  // namespace

TEST_CASE("ZeRO-3 moves 1.5x the bytes of plain data parallelism", "[comm][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(8, 4096);  // bf16 parameters and gradients
  const int n = 8;
  const double psi = static_cast<double>(count_parameters(m).total());  // 8,030,261,248
  Layout l = test::layout(8, 8, 1, 1);                                  // one micro-batch per step
  // DP: one all-reduce of the gradients, 2(n−1)/n·2Ψ bytes (ZeRO paper §7.1). The 201 buckets
  // pad the buffer by fewer than 201 elements: a relative 5e-8 at most.
  const double dp = data_parallel_volume(collectives(m, t, l), n);
  CHECK(dp == Approx(2.0 * (n - 1) / n * 2 * psi).epsilon(5e-8));
  // ZeRO-1 and 2: reduce-scatter and all-gather, the same 2(n−1)/n·2Ψ (§7.2.1).
  l.zero = 1;
  CHECK(data_parallel_volume(collectives(m, t, l), n) == Approx(dp).epsilon(1e-12));
  l.zero = 2;
  CHECK(data_parallel_volume(collectives(m, t, l), n) == Approx(dp).epsilon(1e-12));
  // ZeRO-3: all-gather in forward and in backward plus the reduce-scatter: 3(n−1)/n·2Ψ (§7.2.2),
  // exact here since the 32 layer units divide Ψ.
  l.zero = 3;
  const double zero3 = data_parallel_volume(collectives(m, t, l), n);
  CHECK(zero3 == Approx(3.0 * (n - 1) / n * 2 * psi).epsilon(1e-12));
  CHECK(zero3 / dp == Approx(1.5).epsilon(5e-8));
}

TEST_CASE("gradient accumulation: ZeRO-0/1 reduce once per step, ZeRO-2/3 per micro-batch",
          "[comm][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(32, 4096);
  Layout l = test::layout(8, 32, 1, 1);  // 4 micro-batches
  REQUIRE(l.num_microbatches == 4);
  const double dp = data_parallel_volume(collectives(m, t, l), 8);
  l.zero = 1;
  CHECK(data_parallel_volume(collectives(m, t, l), 8) == Approx(dp).epsilon(1e-12));
  l.zero = 2;  // 4 reduce-scatters and 1 all-gather: (4 + 1)/2 of DP
  CHECK(data_parallel_volume(collectives(m, t, l), 8) == Approx(2.5 * dp).epsilon(1e-12));
  l.zero = 3;  // 4 × (2 all-gathers + 1 reduce-scatter): 6× DP, up to DP's bucket padding
  CHECK(data_parallel_volume(collectives(m, t, l), 8) == Approx(6 * dp).epsilon(5e-8));
}

TEST_CASE("data-parallel buckets follow Megatron-Core's bucket size", "[comm][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Layout l = test::layout(8, 8, 1, 1);
  const Comm ar = find(collectives(m, test::training(8, 4096), l), "grad_reduce dp all_reduce");
  // 8,030,261,248 parameters in buckets of max(40M, 8M) = 40M, each closed once it holds 40M
  // (whole layers of 218,112,000 parameters, or the ends): one bucket per unit, 34 in all.
  CHECK(grad_bucket_params(Training{}, l) == 40'000'000);
  Layout wide = l;
  wide.dp = 32;
  wide.cp = 2;
  CHECK(grad_bucket_params(Training{}, wide) == 64'000'000);  // over dp·cp
  CHECK(ar.calls == 34);
  CHECK(!ar.per_microbatch);
  CHECK(comm_window(ar.action) == CommWindow::backward);
}

TEST_CASE("tensor-parallel collectives per layer, with and without sequence parallelism",
          "[comm][tp]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(16, 4096);
  Layout l = test::layout(8, 16, 8, 1);
  const int64_t activation = 2 * 4096 * 4096;  // s·b·h in bf16
  const Comm ar = find(collectives(m, t, l), "tp all_reduce");
  // Two all-reduces per layer forward and two backward, plus the embedding's and the head's:
  // 4·32 + 2 = 130 (Shoeybi et al. 2019 §3).
  CHECK(ar.calls_per_microbatch == 130);
  CHECK(ar.action.bytes == activation);
  CHECK(comm_window(ar.action) == CommWindow::none);
  const double all_reduce = volume(ar, 8);
  CHECK(all_reduce == Approx(l.num_microbatches * 130 * 2.0 * 7 / 8 * activation));

  // Sequence parallelism: an all-gather and a reduce-scatter in place of each all-reduce, the
  // same volume (Korthikanti §4.2.2), and the head's saved input gathered again for its weight
  // gradient (a layer's backward all-gather carries its re-gather with the output gradient).
  l.sequence_parallel = true;
  const auto sp = collectives(m, t, l);
  const Comm ag = find(sp, "tp all_gather");
  const Comm rs = find(sp, "tp reduce_scatter");
  CHECK(rs.calls_per_microbatch == 130);
  CHECK(ag.calls_per_microbatch == 131);
  CHECK(volume(rs, 8) == Approx(all_reduce / 2));

  // Full recompute repeats the forward's collectives: 6·32 + 2.
  l.sequence_parallel = false;
  l.recompute = Recompute::full;
  CHECK(find(collectives(m, t, l), "tp all_reduce").calls_per_microbatch == 194);
}

TEST_CASE("pipeline, context and expert collectives", "[comm]") {
  const Training t = test::training(64, 4096);
  const Model llama = test::preset_model("llama3-8b");
  Layout l = test::layout(64, 64, 8, 4);
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  const Comm pp = find(collectives(llama, t, l, 1), "send activation");
  // Megatron-LM's p2p tensor (s, b, h) in bf16, one per micro-batch and chunk each way.
  CHECK(pp.action.bytes == 2 * 4096 * 4096);
  CHECK(pp.calls_per_microbatch == 2);
  CHECK(find(collectives(llama, t, l, 1), "send gradient").calls_per_microbatch == 2);
  CHECK(comm_window(pp.action) == CommWindow::pipeline);

  Layout cp = test::layout(16, 64, 1, 1);
  cp.cp = 2;
  cp.dp = 8;
  cp.num_microbatches = 8;
  const auto cp_calls = collectives(llama, t, cp);
  const Comm gather = find(cp_calls, "cp all_gather");
  // TransformerEngine's all-gather CP: K and V of the whole 4096-token sequence, 8 kv heads of
  // 128, in forward and again in backward, per layer and micro-batch; dK, dV reduce-scattered.
  CHECK(gather.action.bytes == 2 * 4096 * 1024 * 2);
  CHECK(gather.calls_per_microbatch == 32 * 2);
  CHECK(find(cp_calls, "cp reduce_scatter").calls_per_microbatch == 32);
  CHECK(find(cp_calls, "grad_reduce dp_cp all_reduce").calls > 0);

  const Model mixtral = test::preset_model("mixtral-8x7b");
  Layout ep = test::layout(8, 64, 1, 1);
  ep.ep = 8;
  const auto ep_calls = collectives(mixtral, t, ep);
  const Comm a2a = find(ep_calls, "ep all_to_all");
  CHECK(a2a.action.bytes == 2 * 4096 * 2 * 4096);  // every token to top_k = 2 experts
  CHECK(a2a.calls_per_microbatch == 32 * 4);
  // dp/ep = 1: the experts have no data-parallel replica to reduce with.
  CHECK(find(ep_calls, "grad_reduce expert_dp all_reduce").calls == 0);
  CHECK(find(ep_calls, "grad_reduce dp all_reduce").calls > 0);
}

TEST_CASE("tied embeddings across the pipeline all-reduce their gradients", "[comm]") {
  const Model m = test::preset_model("gpt3-175b");
  const Layout l = test::layout(64, 64, 8, 8);
  const Comm emb = find(collectives(m, test::training(64, 2048), l, 0), "grad_reduce embedding all_reduce");
  CHECK(emb.calls == 1);
  CHECK(emb.action.bytes == 2 * 6283 * 12288);
  CHECK(comm_window(emb.action) == CommWindow::none);
  CHECK(find(collectives(m, test::training(64, 2048), l, 3), "grad_reduce embedding all_reduce")
            .calls == 0);
}
