#include "simulator/comm_volume.h"

#include <catch2/catch.hpp>

#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

std::vector<CollectiveCall> collectives(const Model& m, const Training& t, const Layout& l,
                                        int stage = 0) {
  std::vector<CollectiveCall> out;
  stage_collectives(m, t, l, stage_layers(m, l, stage), out);
  return out;
}

const CollectiveCall* find(const std::vector<CollectiveCall>& calls, std::string_view name) {
  for (const CollectiveCall& c : calls)
    if (c.name == name) return &c;
  return nullptr;
}
// The call found in a temporary list would outlive it (ASan found one such use).
const CollectiveCall* find(std::vector<CollectiveCall>&& calls, std::string_view name) = delete;

// Bytes one rank sends per step over the data-parallel collectives, with m micro-batches.
double data_parallel_volume(const std::vector<CollectiveCall>& calls, int n, int64_t m) {
  double sum = 0;
  for (const CollectiveCall& c : calls)
    if (c.group == Group::dp)
      sum +=
          volume_bytes(c, n, c.frequency == CommFrequency::per_microbatch ? c.calls * m : c.calls);
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
  const double dp = data_parallel_volume(collectives(m, t, l), n, 1);
  CHECK(dp == Approx(2.0 * (n - 1) / n * 2 * psi).epsilon(5e-8));
  // ZeRO-1 and 2: reduce-scatter and all-gather, the same 2(n−1)/n·2Ψ (§7.2.1).
  l.zero = 1;
  CHECK(data_parallel_volume(collectives(m, t, l), n, 1) == Approx(dp).epsilon(1e-12));
  l.zero = 2;
  CHECK(data_parallel_volume(collectives(m, t, l), n, 1) == Approx(dp).epsilon(1e-12));
  // ZeRO-3: all-gather in forward and in backward plus the reduce-scatter: 3(n−1)/n·2Ψ (§7.2.2),
  // exact here since the 32 layer units divide Ψ.
  l.zero = 3;
  const double zero3 = data_parallel_volume(collectives(m, t, l), n, 1);
  CHECK(zero3 == Approx(3.0 * (n - 1) / n * 2 * psi).epsilon(1e-12));
  CHECK(zero3 / dp == Approx(1.5).epsilon(5e-8));
}

TEST_CASE("gradient accumulation: ZeRO-0/1 reduce once per step, ZeRO-2/3 per micro-batch",
          "[comm][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(32, 4096);
  Layout l = test::layout(8, 32, 1, 1);  // 4 micro-batches
  REQUIRE(l.num_microbatches == 4);
  const double dp = data_parallel_volume(collectives(m, t, l), 8, 4);
  l.zero = 1;
  CHECK(data_parallel_volume(collectives(m, t, l), 8, 4) == Approx(dp).epsilon(1e-12));
  l.zero = 2;  // 4 reduce-scatters and 1 all-gather: (4 + 1)/2 of DP
  CHECK(data_parallel_volume(collectives(m, t, l), 8, 4) == Approx(2.5 * dp).epsilon(1e-12));
  l.zero = 3;  // 4 × (2 all-gathers + 1 reduce-scatter): 6× DP, up to DP's bucket padding
  CHECK(data_parallel_volume(collectives(m, t, l), 8, 4) == Approx(6 * dp).epsilon(5e-8));
}

TEST_CASE("data-parallel buckets follow Megatron-Core's bucket size", "[comm][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Layout l = test::layout(8, 8, 1, 1);
  const auto calls = collectives(m, test::training(8, 4096), l);
  const CollectiveCall* ar = find(calls, "dp_grad_all_reduce");
  REQUIRE(ar);
  // 8,030,261,248 parameters in buckets of max(40M, 8M) = 40M: 201 buckets of 39,951,549 or so.
  CHECK(dp_bucket_elements(8) == 40'000'000);
  CHECK(dp_bucket_elements(64) == 64'000'000);
  CHECK(ar->calls == 201);
  CHECK(ar->bytes == 2 * shard_size(count_parameters(m).total(), 201));
  CHECK(ar->frequency == CommFrequency::per_step);
  CHECK(ar->window == CommWindow::backward);
}

TEST_CASE("tensor-parallel collectives per layer, with and without sequence parallelism",
          "[comm][tp]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(16, 4096);
  Layout l = test::layout(8, 16, 8, 1);
  const int64_t activation = 2 * 4096 * 4096;  // s·b·h in bf16
  auto calls = collectives(m, t, l);
  const CollectiveCall* ar = find(calls, "tp_all_reduce");
  REQUIRE(ar);
  // Two all-reduces per layer forward and two backward, plus the embedding's and the head's:
  // 4·32 + 2 = 130 (Shoeybi et al. 2019 §3).
  CHECK(ar->calls == 130);
  CHECK(ar->bytes == activation);
  const double all_reduce = volume_bytes(*ar, 8, ar->calls);
  CHECK(all_reduce == Approx(130 * 2.0 * 7 / 8 * activation));

  // Sequence parallelism: an all-gather and a reduce-scatter in place of each all-reduce, the
  // same volume (Korthikanti §4.2.2), plus the re-gather of 2 inputs per layer for wgrad.
  l.sequence_parallel = true;
  calls = collectives(m, t, l);
  const CollectiveCall* ag = find(calls, "tp_all_gather");
  const CollectiveCall* rs = find(calls, "tp_reduce_scatter");
  const CollectiveCall* wgrad = find(calls, "tp_all_gather_wgrad");
  REQUIRE(ag);
  REQUIRE(rs);
  REQUIRE(wgrad);
  CHECK(volume_bytes(*ag, 8, ag->calls) + volume_bytes(*rs, 8, rs->calls) == Approx(all_reduce));
  CHECK(wgrad->calls == 64);
  CHECK(wgrad->window == CommWindow::backward);

  // Full recompute repeats the forward's collectives: 6·32 + 2.
  l.sequence_parallel = false;
  l.recompute = Recompute::full;
  const auto recomputed = collectives(m, t, l);
  CHECK(find(recomputed, "tp_all_reduce")->calls == 194);
}

TEST_CASE("pipeline, context and expert collectives", "[comm]") {
  const Training t = test::training(64, 4096);
  const Model llama = test::preset_model("llama3-8b");
  Layout l = test::layout(64, 64, 8, 4);
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  const auto stage_1 = collectives(llama, t, l, 1);
  const CollectiveCall* pp = find(stage_1, "pp_send_recv");
  REQUIRE(pp);
  // s·b·h bf16 scattered over the 8 tp ranks (Narayanan §4.1), forward and backward per chunk.
  CHECK(pp->bytes == 2 * 4096 * 4096 / 8);
  CHECK(pp->calls == 4);

  Layout cp = test::layout(16, 64, 1, 1);
  cp.cp = 2;
  cp.dp = 8;
  cp.num_microbatches = 8;
  const auto cp_calls = collectives(llama, t, cp);
  const CollectiveCall* ring = find(cp_calls, "cp_kv_send_recv");
  REQUIRE(ring);
  // K and V of 2048 local tokens, 8 kv heads of 128: 2·2·2048·1024 bytes; (cp − 1)·3 per layer.
  CHECK(ring->bytes == 2 * 2 * 2048 * 1024);
  CHECK(ring->calls == 32 * 3);
  CHECK(find(cp_calls, "dp_grad_all_reduce")->group == Group::dp_cp);

  const Model mixtral = test::preset_model("mixtral-8x7b");
  Layout ep = test::layout(8, 64, 1, 1);
  ep.ep = 8;
  const auto ep_calls = collectives(mixtral, t, ep);
  const CollectiveCall* a2a = find(ep_calls, "ep_all_to_all");
  REQUIRE(a2a);
  CHECK(a2a->bytes == 2 * 4096 * 2 * 4096);  // every token to top_k = 2 experts
  CHECK(a2a->calls == 32 * 4);
  // dp/ep = 1: the experts have no data-parallel replica to reduce with.
  CHECK(find(ep_calls, "expert_dp_grad_all_reduce") == nullptr);
  CHECK(find(ep_calls, "dp_grad_all_reduce") != nullptr);
}

TEST_CASE("tied embeddings across the pipeline all-reduce their gradients", "[comm]") {
  const Model m = test::preset_model("gpt3-175b");
  const Layout l = test::layout(64, 64, 8, 8);
  const auto first = collectives(m, test::training(64, 2048), l, 0);
  const CollectiveCall* emb = find(first, "embedding_grad_all_reduce");
  REQUIRE(emb);
  CHECK(emb->group_size == 2);
  CHECK(emb->bytes == 2 * 6283 * 12288);
  const auto last = collectives(m, test::training(64, 2048), l, 3);
  CHECK(find(last, "embedding_grad_all_reduce") == nullptr);
}
