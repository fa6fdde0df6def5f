// The GEMM shapes a layer's forward and backward pass make, as recorded from the calls of
// executor/layers/linear.cpp and attention.cpp (calibrate/layer_gemms.h) and pinned here by hand,
// and how variants of one shape combine into its rate. tests/calibrate/mpi/layer_gemms_test.cpp
// checks the recording against a real step of the interpreter.
#include "calibrate/calibrate_gemm.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

bool has(const std::vector<GemmCall>& calls, GemmCall c) {
  return std::find(calls.begin(), calls.end(), c) != calls.end();
}

TEST_CASE("GEMM calls of a layer: gpt-tiny's tp=2 share, 2 sequences of 64 tokens", "[calibrate]") {
  // gpt-tiny (hidden 64, 4 heads of 16, ffn 256) split over tp=2.
  const LayerDims d{.batch = 2,
                    .seq = 64,
                    .hidden = 64,
                    .heads = 2,
                    .kv_heads = 2,
                    .head_dim = 16,
                    .ffn = 128,
                    .tp = 2};
  const auto calls = layer_gemm_calls(d, 128, "tiny", heads_per_call_of(cpu_kernels<float>()));
  const auto N = Op::none, T = Op::transpose;
  const auto set = Accumulate::overwrite, add = Accumulate::add;
  // qkv: 128 tokens × 64 in × 96 out (2 heads × 3 × 16); W, dW and the saved x are cold.
  CHECK(has(calls, {128, 96, 64, N, T, set, "", false, true, false}));  // y = x·Wᵀ
  CHECK(has(calls, {128, 64, 96, N, N, set, "", false, true, false}));  // dx = dy·W
  CHECK(has(calls, {96, 64, 128, T, N, add, "", false, true, true}));   // dW += dyᵀ·x
  // Attention, per sequence and head: 64×64 scores over head_dim 16, q, k, v 16 columns of the
  // QKV rows (96 wide), the context 16 of its 32. Six calls as the layer makes them: the scores
  // write cold probabilities, dv reads them cold, and dP, dq, dk read the saved v, k, q cold.
  const auto attention = [&](GemmCall c) {
    const auto it = std::find(calls.begin(), calls.end(), c);
    return it == calls.end() ? std::string("missing") : it->what;
  };
  CHECK(attention({64, 64, 16, N, T, set, "", false, false, true, 96, 96, 0}) ==
        "tiny attn scores");
  CHECK(attention({64, 16, 64, N, N, set, "", false, false, true, 0, 96, 32}) ==
        "tiny attn context");
  CHECK(attention({64, 64, 16, N, T, set, "", false, true, false, 32, 96, 0}) == "tiny attn dP");
  CHECK(attention({64, 16, 64, T, N, add, "", true, false, false, 0, 32, 96}) == "tiny attn dv");
  CHECK(attention({64, 16, 64, N, N, set, "", false, true, true, 0, 96, 96}) == "tiny attn dq");
  CHECK(attention({64, 16, 64, T, N, add, "", false, true, false, 0, 96, 96}) == "tiny attn dk");
  // proj 32 → 64, fc2 128 → 64.
  CHECK(has(calls, {128, 64, 32, N, T, set, "", false, true, false}));
  CHECK(has(calls, {64, 128, 128, T, N, add, "", false, true, true}));
  // fc1 (64 → 128) and the LM head (64 → 128 vocabulary rows) make the same three calls: 4 × 3
  // linear calls and 6 of attention.
  CHECK(calls.size() == 18);
  const auto fc1 = std::find(calls.begin(), calls.end(),
                             GemmCall{128, 128, 64, N, T, set, "", false, true, false});
  REQUIRE(fc1 != calls.end());
  CHECK(fc1->what == "tiny fc1 fwd");
  CHECK(fc1->flops() == 2.0 * 128 * 128 * 64);
}

TEST_CASE("GEMM rates: variants of one shape combine as FLOPs over summed time", "[calibrate]") {
  const auto N = Op::none, T = Op::transpose;
  const std::vector<GemmTiming> timings{
      {{100, 100, 100, N, N, Accumulate::overwrite, "a"}, 1e-3},  // 2e6 FLOPs
      {{100, 100, 100, N, T, Accumulate::overwrite, "b"}, 3e-3},  // 2e6 FLOPs
      {{10, 20, 30, T, N, Accumulate::add, "c"}, 12e-6}};         // 12000 FLOPs
  const std::vector<GemmRate> rates = gemm_rates(timings);
  REQUIRE(rates.size() == 2);
  CHECK(rates[0] == GemmRate{10, 20, 30, rates[0].tflops});
  CHECK(rates[0].tflops == Approx(1e-3).epsilon(1e-12));  // 12000 / 12 us = 1 GFLOP/s
  CHECK(rates[1] == GemmRate{100, 100, 100, rates[1].tflops});
  CHECK(rates[1].tflops == Approx(1e-3).epsilon(1e-12));  // 4e6 / 4 ms
  std::vector<GemmCall> into{timings[0].call};
  GemmCall cold_output = timings[0].call, strided = timings[0].call;
  cold_output.cold_c = true;
  strided.stride_a = 128;
  add_distinct(into, {timings[1].call, timings[0].call, cold_output, timings[1].call, strided});
  CHECK(into.size() == 4);  // a cold or strided operand makes a call of its own
}

}  // namespace
}  // namespace shardplan
