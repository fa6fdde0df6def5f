// The cost model against published measurements of large training runs, without tuning: the
// figures are printed with their errors, and two bounds are asserted. The model must not grow more
// optimistic than it is known to be (the largest error of each table, written beside it, under a
// rounder bound), so that a cost dropped from the model fails here too; and it must not fall more
// than kMaxPessimism below a published figure, which would mean a cost counted twice or a rate too
// low.
#include <algorithm>
#include <catch2/catch.hpp>
#include <span>
#include <vector>

#include "simulator/estimate.h"
#include "simulator/model_flops.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// A GPT layer stack of Megatron-LM's papers: ffn = 4h, GeLU, LayerNorm, learned positions,
// biases, vocabulary 51200 (GPT-2's padded), sequence 2048.
Model megatron_gpt(int heads, int64_t hidden, int layers) {
  Model m = test::preset_model("gpt3-175b");
  m.name = "megatron-gpt";
  m.num_heads = m.num_kv_heads = heads;
  m.hidden = hidden;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.num_layers = layers;
  m.vocab = 51200;
  return m;
}

struct Run {
  const char* source;
  Model model;
  const char* cluster;
  int gpus, tp, pp, vpp;
  int64_t global_batch, seq_len;
  Recompute recompute;
  bool sequence_parallel;
  ExecutionOptions options;
  double published;     // TFLOP/s per GPU, or MFU
  double max_optimism;  // the largest relative error above the published figure asserted
};

// Since the A100's sustained clock is fitted on the development set's A100 runs (0.85,
// tools/fit_a100_clock.py, 2026-11-26), the Megatron-LM tables below come out within −5% to +6%
// from 39B up, and their smallest models below their published figures: 18.4B −14.8%, 22B
// −13.7% (they were −6.6% and −5.4%, and the rest +2% to +19%, at the datasheet clock; the mean
// absolute error over the 12 rows went from 9.1% to 6.4%). NVIDIA's Selene ran its tensor cores
// faster than the development set's clusters did, or these small runs issued their kernels
// faster; the bound is the noise floor the fidelity set names (5-11%, data/fidelity README) over
// that.
constexpr double kMaxPessimism = 0.16;

// Prints predicted against published and checks the error against both bounds.
void compare(const Run& r, double predicted, const char* what) {
  const double error = predicted / r.published - 1;
  WARN(r.source << ": " << what << " predicted " << predicted << ", published " << r.published
                << " (" << (error >= 0 ? "+" : "") << 100 * error << "%)");
  CHECK(error >= -kMaxPessimism);
  CHECK(error <= r.max_optimism);
}

Estimate run_estimate(const Run& r) {
  const Cluster c = test::preset_cluster(r.cluster, r.gpus / 8);
  Layout l = test::layout(r.gpus, r.global_batch, r.tp, r.pp);
  l.vpp = r.vpp;
  l.schedule = r.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  l.recompute = r.recompute;
  l.sequence_parallel = r.sequence_parallel;
  return estimate(r.model, c, test::training(r.global_batch, r.seq_len), l, r.options);
}

double hardware_tflops_per_gpu(const Estimate& e) {
  return e.hardware_flops_per_step / e.step_time_s / static_cast<double>(e.world) / 1e12;
}

// One row of the Megatron-LM papers' tables: tp = 8, sequence 2048, on Selene (DGX A100 80GB,
// 8 HDR NICs per node), no flash attention, dropout on, micro-batch 1 and 1F1B.
struct MegatronRow {
  const char* source;
  int heads;
  int64_t hidden;
  int layers, gpus, pp;
  int64_t global_batch;
  double published;
};

Run megatron_run(const MegatronRow& row, Recompute recompute, bool sp, double max_optimism) {
  return Run{row.source,
             megatron_gpt(row.heads, row.hidden, row.layers),
             "dgx-a100",
             row.gpus,
             8,
             row.pp,
             1,
             row.global_batch,
             2048,
             recompute,
             sp,
             ExecutionOptions{.attention = AttentionKernel::unfused, .dropout = true},
             row.published,
             max_optimism};
}

// Each row's estimate, measured as `measure` says, against the published figure.
template <class Measure>
void compare_rows(std::span<const MegatronRow> rows, Recompute recompute, bool sp,
                  double max_optimism, const char* what, Measure measure) {
  for (const MegatronRow& row : rows) {
    const Run r = megatron_run(row, recompute, sp, max_optimism);
    compare(r, measure(run_estimate(r)), what);
  }
}

}  // namespace

TEST_CASE("Narayanan et al. 2021 Table 1: TFLOP/s per A100 with full recomputation",
          "[published]") {
  // Full recomputation; micro-batch and schedule are not stated in the table. The paper's
  // TFLOP/s count eq. 3 with recomputation: hardware FLOPs here. Predicted −14.8% (18.4B) to
  // +2.3% on this table, +5.8% for GPT-3 175B (2026-11-26); asserted up to +30%.
  const MegatronRow rows[] = {
      {"18.4B", 48, 6144, 40, 256, 1, 1024, 135},
      {"39.1B", 64, 8192, 48, 512, 2, 1536, 138},
      {"76.1B", 80, 10240, 60, 1024, 4, 1792, 140},
      {"145.6B", 96, 12288, 80, 1536, 8, 2304, 148},
      {"310.1B", 128, 16384, 96, 1920, 16, 2160, 155},
      {"529.6B", 128, 20480, 105, 2520, 35, 2520, 163},
      {"1008B", 160, 25600, 128, 3072, 64, 3072, 163},
  };
  compare_rows(rows, Recompute::full, false, 0.3, "TFLOP/s per GPU", hardware_tflops_per_gpu);
  // GPT-3 175B on 1024 GPUs, tp 8, pp 8, batch 1536: about 138 TFLOP/s as the lead's brief quotes
  // the paper.
  const Run gpt3 =
      megatron_run({"GPT-3 175B", 96, 12288, 96, 1024, 8, 1536, 138}, Recompute::full, false, 0.3);
  compare(gpt3, hardware_tflops_per_gpu(run_estimate(gpt3)), "TFLOP/s per GPU");
}

TEST_CASE("Korthikanti et al. 2022: MFU with sequence parallelism and selective recomputation",
          "[published]") {
  // Their Table 3 configurations and end-to-end MFU (Table 5). Predicted −13.7% (22B) to −7.4%
  // (1T) on 2026-11-26; asserted up to +20%.
  const MegatronRow rows[] = {
      {"22B", 64, 6144, 48, 8, 1, 4, 0.415},
      {"175B", 96, 12288, 96, 64, 8, 64, 0.514},
      {"530B", 128, 20480, 105, 280, 35, 280, 0.560},
      {"1T", 160, 25600, 128, 512, 64, 512, 0.563},
  };
  compare_rows(rows, Recompute::selective, true, 0.2, "MFU",
               [](const Estimate& e) { return e.mfu; });
}

TEST_CASE("Llama 3 405B on 16K H100: TP8 CP1 PP16 DP128, 8192 tokens", "[published]") {
  // Dubey et al. 2024 Table 4: 400 TFLOP/s per GPU, 41% BF16 MFU at 16,384 GPUs. 126 layers do not
  // divide over 16 stages; Llama 3 takes one layer off the first and the last stage. Here: 128
  // layers, and MFU counted with the 126-layer model's FLOPs. The paper gives neither the number
  // of virtual stages nor the recomputation, so no single prediction is asserted: vpp 1 must come
  // out below the published MFU and the best of vpp 1-8 within the 10 % noise floor of it (24% to
  // 39% with the H100 GEMM efficiency fitted on 2026-11-26; 31% to 52% before).
  Model m = test::preset_model("llama3-405b");
  const double flops_126 = model_flops_per_step(m, 2048, 8192);
  m.num_layers = 128;
  constexpr double kPublishedMfu = 0.41;
  std::vector<double> predicted;
  for (int vpp : {1, 2, 4, 8}) {
    const Run r{"405B",          m,    "dgx-h100",         16384,         8, 16, vpp, 2048, 8192,
                Recompute::none, true, ExecutionOptions{}, kPublishedMfu, 0};
    const Estimate e = run_estimate(r);
    predicted.push_back(flops_126 / (e.step_time_s * 16384 * e.peak_flops_per_device));
    WARN("405B, vpp " << vpp << ": MFU predicted " << predicted.back() << ", published "
                      << kPublishedMfu);
  }
  CHECK(*std::min_element(predicted.begin(), predicted.end()) <= kPublishedMfu);
  CHECK(*std::max_element(predicted.begin(), predicted.end()) >= 0.9 * kPublishedMfu);
}
