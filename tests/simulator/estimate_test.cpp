#include "simulator/estimate.h"

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <string>

#include "simulator/collective_cost.h"
#include "simulator/estimate_report.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

const CollectiveEstimate* find(const Estimate& e, std::string_view name) {
  for (const CollectiveEstimate& c : e.collectives)
    if (c.name() == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("a cross-node tp group is priced on the inter-node level", "[estimate][comm]") {
  // Two nodes of 4 GPUs: tp = 8 spans both, tp = 4 stays inside one.
  Cluster c = test::preset_cluster("dgx-h100", 2);
  c.devices_per_node = 4;
  c.levels[0].span_devices = 4;
  c.levels[1].nics_per_node = 4;
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(16, 4096);

  const Estimate across = estimate(m, c, t, test::layout(8, 16, 8, 1));
  const CollectiveEstimate* tp8 = find(across, "tp all_reduce");
  REQUIRE(tp8);
  CHECK(tp8->span.level == 1);
  CHECK(tp8->level_name == "infiniband");
  CHECK(tp8->span.nodes == 2);

  const Estimate inside = estimate(m, c, t, test::layout(8, 16, 4, 1));
  const CollectiveEstimate* tp4 = find(inside, "tp all_reduce");
  REQUIRE(tp4);
  CHECK(tp4->span.level == 0);
  CHECK(tp4->level_name == "nvlink");
  // The data-parallel pair of inside's layout is split across the nodes.
  CHECK(find(inside, "grad_reduce dp all_reduce")->span.level == 1);
}

TEST_CASE("a node's groups of a kind share its NICs", "[estimate][comm]") {
  // tp = 8 on each of two DGX H100 nodes given 2 NICs each: the node's 8 dp pairs, one member per
  // node, reduce at once, so each has a quarter of a NIC (2 · 50 / 8 GB/s at NCCL's scale-out
  // efficiency), where one pair measured alone (ranks_span) has a whole one.
  const Model m = test::preset_model("llama3-8b");
  const Training t = test::training(16, 4096);
  const Layout l = test::layout(16, 16, 8, 1);
  Cluster c = test::preset_cluster("dgx-h100", 2);
  c.levels[1].nics_per_node = 2;
  const Estimate e = estimate(m, c, t, l);
  const CollectiveEstimate* dp = find(e, "grad_reduce dp all_reduce");
  REQUIRE(dp);
  CHECK(dp->span.max_ranks_per_node == 1);
  CHECK(dp->span.nic_sharers == 8);
  CHECK(dp->cost.busbw_GBps ==
        Approx(2 * c.levels[1].nic_GBps / 8 * kNcclScaleOutEfficiency).epsilon(0.02));
  const std::array<int64_t, 2> pair{0, 8};
  const CollectiveCost alone =
      collective_cost(c, Collective::all_reduce, dp->action.bytes, ranks_span(c, Group::dp, pair));
  CHECK(alone.busbw_GBps > 1.5 * dp->cost.busbw_GBps);
}

TEST_CASE("the step time is the sum of its parts, MFU and HFU follow", "[estimate]") {
  const Model m = test::preset_model("llama3-70b");
  const Cluster c = test::preset_cluster("dgx-h100", 8);
  Training t = test::training(128, 4096);
  t.tokens_to_train = 1e12;
  t.price_per_device_hour = 2;
  Layout l = test::layout(64, 128, 8, 4, 1, 1);
  l.sequence_parallel = true;
  l.recompute = Recompute::selective;
  l.vpp = 2;
  l.schedule = Schedule::interleaved;
  const Estimate e = estimate(m, c, t, l);
  const StepTime& s = e.time;
  CHECK(e.step_time_s == Approx(s.compute_s + s.recompute_s + s.microbatch_comm_s + s.bubble_s +
                                s.step_comm_s + s.interference_s + s.optimizer_s));
  CHECK(s.compute_s > 0);
  CHECK(s.recompute_s > 0);
  CHECK(s.bubble_s > 0);
  CHECK(e.tokens_per_step == 128 * 4096);
  CHECK(e.tokens_per_s == Approx(128 * 4096 / e.step_time_s));
  CHECK(e.mfu == Approx(e.tflops_per_device * 1e12 / 989.5e12));  // dgx-h100 preset's bf16 peak
  CHECK(e.hfu > e.mfu);
  CHECK(e.train_time_s == Approx(1e12 / e.tokens_per_s));
  CHECK(e.train_cost == Approx(e.train_time_s / 3600 * 64 * 2));
  CHECK(e.stages.size() == 4);
  CHECK(e.fits);
  // Interleaved pipeline with p = 4, m = 64, v = 2: (p − 1)/(m·v + p − 1) = 3/131 for equal
  // stages; the slowest stage (the last, which also runs the head) idles less than that.
  CHECK(l.num_microbatches == 64);
  CHECK(e.bubble_fraction > 0);
  CHECK(e.bubble_fraction <= 3.0 / 131);
}

TEST_CASE("an infeasible layout reports the item that does not fit", "[estimate][fit]") {
  const Model m = test::preset_model("gpt3-175b");
  const Cluster c = test::preset_cluster("dgx-a100", 1);
  const Estimate e = estimate(m, c, test::training(8, 2048), test::layout(8, 8, 8, 1));
  // 21.8e9 parameters per rank: 40.7 GiB of bf16 weights, and as much for the gradients,
  // which exceed the 78.5 − 40.7 GiB left after the preset's 1.5 GiB reserve.
  CHECK_FALSE(e.fits);
  REQUIRE(e.overflow);
  CHECK(e.overflow->item == "gradients");
  const std::string table = format_estimate_table(e);
  CHECK(table.find("does not fit: gradients needs 40.") != std::string::npos);
  const nlohmann::json j = estimate_to_json(e);
  CHECK(j["fits"] == false);
  CHECK(j["memory"]["overflow"]["item"] == "gradients");
}

TEST_CASE("estimate JSON carries the conventions' keys and every item", "[estimate][report]") {
  const Model m = test::preset_model("llama3-8b");
  Layout l = test::layout(16, 64, 2, 2, 2, 1);
  const Estimate e = estimate(m, test::preset_cluster("dgx-h100", 2), test::training(64, 4096), l);
  const nlohmann::json j = estimate_to_json(e);
  for (const char* key : {"step_time_s", "tokens_per_s", "tflops_per_device", "mfu", "hfu",
                          "bubble_fraction", "exposed_comm_s", "fits"})
    CHECK(j.contains(key));
  for (const char* key : {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                          "activations_bytes", "other_bytes", "peak_bytes"})
    CHECK(j["memory"][key].is_number_integer());
  const RankMemory& r = e.memory();
  CHECK(j["memory"]["peak_bytes"] == r.peak_bytes());
  CHECK(j["memory"]["items"]["optimizer_moments_bytes"] == r.state.optimizer_moments);
  CHECK(j["stages"].size() == 2);
  CHECK(j["collectives"].size() == e.collectives.size());
  CHECK(j["compute"]["forward"]["matmul"]["flops"] == e.compute.forward[OpKind::matmul].flops);
  double exposed = 0;
  for (const auto& c : j["collectives"]) exposed += c["exposed_s"].get<double>();
  CHECK(exposed == Approx(j["exposed_comm_s"].get<double>()));

  const std::string table = format_estimate_table(e);
  for (const char* text : {"step time", "MFU", "optimizer_moments", "layer_activations",
                           "tp all_reduce", "send ", "grad_reduce dp reduce_scatter", "fits:"})
    CHECK(table.find(text) != std::string::npos);
}

TEST_CASE("overlap: DP reduction hides under backward, TP does not", "[estimate][comm]") {
  const Model m = test::preset_model("llama3-8b");
  const Estimate e = estimate(m, test::preset_cluster("dgx-h100", 2), test::training(64, 4096),
                              test::layout(16, 64, 8, 1));
  const CollectiveEstimate* tp = find(e, "tp all_reduce");
  REQUIRE(tp);
  CHECK(tp->exposed_s == Approx(tp->total_s));
  double exposed = 0, total = 0, longest = 0;
  for (const CollectiveEstimate& c : e.collectives)
    if (c.name() == "grad_reduce dp all_reduce") {
      exposed += c.exposed_s;
      total += c.total_s;
      longest = std::max(longest, c.cost.time_s);
    }
  CHECK(longest > 0);
  CHECK(exposed < total);
  CHECK(exposed >= longest);  // the last bucket at least
}

TEST_CASE("the CPU topology: finite figures, and an error for a dtype it lacks", "[estimate]") {
  const Model m = test::preset_model("gpt-tiny");
  const Cluster c = test::preset_cluster("local-cpu", 1);
  Training t = test::training(8, 64);
  const Layout l = test::layout(2, 8, 1, 2);
  const Estimate e = estimate(m, c, t, l);
  CHECK(std::isfinite(e.step_time_s));
  CHECK(e.step_time_s > 0);
  CHECK(e.fits);
  CHECK(e.mfu > 0);
  CHECK(e.mfu < 1);
  t.dtype = Dtype::fp16;  // local-cpu gives fp16 no peak
  CHECK_THROWS_WITH(estimate(m, c, t, l), Catch::Contains("device.peak_tflops.fp16"));
}

TEST_CASE("time to estimate one layout", "[.benchmark][estimate]") {
  struct Case {
    const char* model;
    int nodes, tp, pp, vpp;
    int64_t global_batch, seq_len;
  };
  for (const Case& k :
       {Case{"llama3-8b", 1, 1, 1, 1, 64, 8192}, Case{"llama3-70b", 128, 8, 8, 5, 1024, 8192},
        Case{"llama3-405b", 2304, 8, 18, 7, 2048, 8192}}) {
    const Model m = test::preset_model(k.model);
    const Cluster c = test::preset_cluster("dgx-h100", k.nodes);
    Layout l = test::layout(c.world(), k.global_batch, k.tp, k.pp, 1, 1);
    l.sequence_parallel = k.tp > 1;
    l.vpp = k.vpp;
    if (k.vpp > 1) l.schedule = Schedule::interleaved;
    const Training t = test::training(k.global_batch, k.seq_len);
    const int calls = 20000;
    double sink = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) sink += estimate(m, c, t, l).step_time_s;
    const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
    WARN("estimate(): " << us.count() / calls << " us per call: " << k.model << " on " << c.world()
                        << " GPUs, " << to_string(l) << " (sink " << sink << ")");
  }
}

TEST_CASE("a cache gives every layout the estimate it gets alone", "[estimate][cache]") {
  // In the planner's order (splits, then schedules, then ZeRO stages, recomputation innermost), so
  // that entries are reused (a stage's passes across the splits that give it the same layers and
  // across GPipe and 1F1B), and across pipeline, sequence parallelism and experts.
  const Cluster c = test::preset_cluster("dgx-h100", 4);
  std::array<EstimateCache, 2> caches;  // a cache serves one set of execution options
  int checked = 0;
  for (const char* name : {"llama3-8b", "mixtral-8x7b"}) {
    const Model m = test::preset_model(name);
    for (int pp : {1, 2, 4})
      for (bool sp : {false, true})
        for (const std::vector<int>& split :
             pp == 4 ? std::vector<std::vector<int>>{{}, {8, 8, 9, 7}, {7, 8, 8, 9}}
                     : std::vector<std::vector<int>>{{}})
          for (Schedule schedule :
               pp == 1 ? std::vector<Schedule>{Schedule::one_f_one_b}
                       : std::vector<Schedule>{Schedule::one_f_one_b, Schedule::gpipe,
                                               Schedule::zb_h1, Schedule::zb_h2})
            for (int zero : {0, 1, 2, 3})
              for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
                // A split backward runs with ZeRO-0/1 and without full recomputation.
                if (splits_backward(schedule) && (zero > 1 || r == Recompute::full)) continue;
                Layout l = test::layout(32, 64, 4, pp);
                l.zero = zero;
                l.recompute = r;
                l.sequence_parallel = sp;
                l.ep = m.is_moe() ? 2 : 1;
                l.schedule = schedule;
                l.stages = split;
                const Training t = test::training(64, 4096);
                // Megatron-Core's fused gradient accumulation with its userbuffers overlap, and
                // PyTorch's AccumulateGrad in FP8 with cached weights, whose costs read the ZeRO
                // stage and the micro-batches (their own cache keys).
                for (const bool autograd : {false, true}) {
                  const GradAccumulation a =
                      autograd ? GradAccumulation::autograd : GradAccumulation::fused;
                  ExecutionOptions x;
                  x.grad_accumulation = a;
                  x.fp8_weight_cache = autograd;
                  Training tt = t;
                  tt.tp_comm_overlap = !autograd;
                  if (autograd) tt.fp8 = Fp8Recipe::delayed;
                  EstimateCache& cache = caches[autograd ? 1 : 0];
                  INFO(name << " " << to_string(l) << " " << enum_name(a, kGradAccumulationNames));
                  const Estimate alone = estimate(m, c, tt, l, x);
                  const Estimate shared = estimate(m, c, tt, l, x, &cache);
                  CHECK(shared.step_time_s == alone.step_time_s);
                  CHECK(shared.exposed_comm_s == alone.exposed_comm_s);
                  CHECK(shared.memory().peak_bytes() == alone.memory().peak_bytes());
                  CHECK(shared.collectives.size() == alone.collectives.size());
                  ++checked;
                }
              }
  }
  // Per model, sp and accumulation: pp 1 (12), pp 2 (1F1B and GPipe 12 each, ZB-H1 and ZB-H2 4
  // each), pp 4 (three splits).
  CHECK(checked == 2 * 2 * 2 * (12 + 32 + 3 * 32));
}

TEST_CASE("compute slowed by the communication it hides: NCCL's SMs while it runs",
          "[estimate][interference]") {
  const Model m = test::preset_model("llama3-8b");
  const Cluster c = test::preset_cluster("dgx-h100", 1);
  const Training t = test::training(16, 4096);
  const int sms = c.device.efficiency.sm_count;
  REQUIRE(sms == 132);

  // ZeRO-3 over the node: the gathers and reduce-scatters run on their own streams beside the
  // compute, each taking its channels' SMs.
  const Estimate zero3 = estimate(m, c, t, test::layout(8, 16, 1, 1, 1, 3));
  double hidden_s = 0, max_share = 0;
  for (const CollectiveEstimate& r : zero3.collectives) {
    hidden_s += r.total_s - r.exposed_s;
    max_share = std::max(
        max_share, static_cast<double>(nccl_channels(c, r.action.op, r.action.bytes, r.span)) / sms);
  }
  CHECK(max_share > 0);
  CHECK(max_share <= 32.0 / sms);
  CHECK(zero3.time.interference_s > 0);
  CHECK(zero3.time.interference_s <= hidden_s * max_share * (1 + 1e-9));
  CHECK(zero3.step_time_s == Approx(zero3.time.compute_s + zero3.time.recompute_s +
                                    zero3.time.microbatch_comm_s + zero3.time.bubble_s +
                                    zero3.time.step_comm_s + zero3.time.interference_s +
                                    zero3.time.optimizer_s));

  // Nothing runs beside the compute: tp's all-reduces block it, and pipeline messages are sends.
  CHECK(estimate(m, c, t, test::layout(8, 16, 8, 1)).time.interference_s == 0);
  CHECK(estimate(m, c, t, test::layout(8, 16, 2, 4)).time.interference_s == 0);

  // A device without SMs (CPU ranks) and one thread in program order overlap nothing.
  Cluster cpu = c;
  cpu.device.efficiency.sm_count = 0;
  CHECK(estimate(m, cpu, t, test::layout(8, 16, 1, 1, 1, 3)).time.interference_s == 0);
  ExecutionOptions serial;
  serial.streams = StreamExecution::program_order;
  CHECK(estimate(m, c, t, test::layout(8, 16, 1, 1, 1, 3), serial).time.interference_s == 0);
}
