// FP8 linear layers as Transformer Engine runs them (Training::fp8): their GEMMs at the FP8 rate,
// the casts counted by hand, what stays in the compute dtype, the copies and activations they
// keep, and the devices and profiles that cannot price them.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "core/error.h"
#include "simulator/action_cost.h"
#include "simulator/activation_memory.h"
#include "simulator/compute_model.h"
#include "simulator/estimate.h"
#include "simulator/memory_model.h"
#include "simulator/rank_shape.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {

// A framework that keeps the FP8 weights over the step (Megatron-Core's), or not.
MicrobatchCompute stage0(Fp8Recipe fp8, bool weight_cache = true) {
  const Model m = test::preset_model("gpt-tiny");  // h = 64, ffn = 256, 4 layers
  Training t = test::training(16, 32);
  t.fp8 = fp8;
  Layout l;
  l.pp = 2;  // stage 0: two layers and the embedding
  l.num_microbatches = 4;
  ExecutionOptions x;
  x.fp8_weight_cache = weight_cache;
  return microbatch_compute(m, t, l, stage_layers(m, l, 0), test::round_rates(), x);
}

std::string thrown_field(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.field;
  }
  return "nothing thrown";
}

}  // namespace

TEST_CASE("FP8 linears: GEMMs at the FP8 rate, and each operand quantized first",
          "[compute][fp8]") {
  const MicrobatchCompute bf16 = stage0(Fp8Recipe::none), fp8 = stage0(Fp8Recipe::delayed);
  // The same FLOPs at twice the rate: every GEMM of these two stage-0 layers is a linear one.
  CHECK(fp8.forward[OpKind::matmul].flops == bf16.forward[OpKind::matmul].flops);
  CHECK(fp8.forward[OpKind::matmul].time_s == Approx(bf16.forward[OpKind::matmul].time_s / 2));
  CHECK(fp8.backward[OpKind::matmul].time_s == Approx(bf16.backward[OpKind::matmul].time_s / 2));
  // T = 32 tokens per layer: inputs quantized going forward, 32·(64 + 64 + 64 + 256) = 14,336;
  // output gradients going backward, 32·(192 + 64 + 256 + 64) = 18,432; the 12h² = 49,152
  // weights once a step, a quarter of them per micro-batch of 4. Delayed scaling: 2 bytes read,
  // two 1-byte copies written.
  const double layers = 2, forward = 14'336 + 49'152 / 4.0, backward = 18'432;
  CHECK(fp8.forward[OpKind::memory_bound].bytes - bf16.forward[OpKind::memory_bound].bytes ==
        Approx(layers * 4 * forward));
  CHECK(fp8.backward[OpKind::memory_bound].bytes - bf16.backward[OpKind::memory_bound].bytes ==
        Approx(layers * 4 * backward));
  // Without the cache every micro-batch casts all the weights.
  CHECK(stage0(Fp8Recipe::delayed, false).forward[OpKind::memory_bound].bytes -
            bf16.forward[OpKind::memory_bound].bytes ==
        Approx(layers * 4 * (14'336 + 49'152)));
  // Current scaling reads each tensor once more for its amax; MXFP8 writes a scale per 32 each
  // way.
  const auto cast_bytes = [&](Fp8Recipe r) {
    return stage0(r).backward[OpKind::memory_bound].bytes -
           bf16.backward[OpKind::memory_bound].bytes;
  };
  CHECK(cast_bytes(Fp8Recipe::current) == Approx(layers * 6 * backward));
  CHECK(cast_bytes(Fp8Recipe::mxfp8) == Approx(layers * (4 + 1.0 / 16) * backward));
}

TEST_CASE("FP8 leaves the LM head and the attention core in the compute dtype", "[compute][fp8]") {
  const Model m = test::preset_model("gpt-tiny");
  Training t = test::training(4, 32);
  Layout l;
  const PartsCompute bf16 = model_parts_compute(m, t, l, test::round_rates(), {});
  t.fp8 = Fp8Recipe::delayed;
  const PartsCompute fp8 = model_parts_compute(m, t, l, test::round_rates(), {});
  CHECK(fp8[Part::head].forward[OpKind::matmul].time_s ==
        bf16[Part::head].forward[OpKind::matmul].time_s);
  CHECK(fp8[Part::attention_core].forward[OpKind::attention].time_s ==
        bf16[Part::attention_core].forward[OpKind::attention].time_s);
  CHECK(fp8[Part::mlp].forward[OpKind::matmul].time_s <
        bf16[Part::mlp].forward[OpKind::matmul].time_s);
}

TEST_CASE("FP8 memory: the weights' copies, and the linears' inputs kept in one byte",
          "[memory][fp8]") {
  const Model m = test::preset_model("gpt-tiny");  // GeLU: fc1's output, then fc2's input
  Training t = test::training(4, 32);
  Layout l = test::layout(2, 4, 1, 1, 1, 1);  // dp 2, ZeRO-1
  const StageLayers s = stage_layers(m, l, 0);
  const ParamShard p = param_shard(m, l, s);
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  ExecutionOptions x;
  x.fp8_weight_cache = true;
  const auto copies = [&] { return rank_memory(m, t, l, s, d, x).state.fp8_weights; };
  CHECK(copies() == 0);
  t.fp8 = Fp8Recipe::delayed;
  CHECK(copies() == 2 * (p.attention + p.mlp));
  // Blackwell's FP8 GEMMs take any layout: one copy serves both of a pair (but not MXFP8's).
  const Device b200 = test::preset_cluster("dgx-b200", 1).device;
  CHECK(rank_memory(m, t, l, s, b200, x).state.fp8_weights == p.attention + p.mlp);
  t.fp8 = Fp8Recipe::mxfp8;
  CHECK(copies() ==
        static_cast<int64_t>(static_cast<double>(p.attention + p.mlp) * (2 + 2.0 / 32)));
  l.zero = 3;  // each unit cast as it is gathered: no kept copy
  CHECK(copies() == 0);
  l.zero = 1;
  x.fp8_weight_cache = false;  // cast at every micro-batch
  CHECK(copies() == 0);

  // A layer keeps the inputs of QKV, the output projection, fc1 and fc2 (32 tokens of 64, 64, 64
  // and 256) in one byte instead of two.
  const RankShape shape = rank_shape(t, test::layout(1, 4, 1, 1));
  const int64_t bf16 =
      layer_activation_bytes(m, Dtype::bf16, shape, false, Recompute::none, {}, Fp8Recipe::none);
  const int64_t fp8 =
      layer_activation_bytes(m, Dtype::bf16, shape, false, Recompute::none, {}, Fp8Recipe::delayed);
  CHECK(bf16 - fp8 == 32 * (64 + 64 + 64 + 256));
}

TEST_CASE("FP8 needs the device's FP8 tensor cores, MXFP8 Blackwell's, and no 16-bit profile",
          "[estimate][fp8]") {
  const Model m = test::preset_model("llama3-8b");
  Training t = test::training(64, 4096);
  t.fp8 = Fp8Recipe::delayed;
  const Layout l = test::layout(8, 64, 1, 1);
  const Estimate e = estimate(m, test::preset_cluster("dgx-h100", 1), t, l);
  // MFU of the FP8 peak, as llm-foundry's and NVIDIA's FP8 figures count it.
  CHECK(e.peak_flops_per_device == Approx(1979e12));
  CHECK(e.best_published_mfu == Approx(0.449));  // the FP8 bound, not the bf16 one
  t.fp8 = Fp8Recipe::none;
  CHECK(estimate(m, test::preset_cluster("dgx-h100", 1), t, l).step_time_s > e.step_time_s);

  t.fp8 = Fp8Recipe::delayed;
  CHECK(thrown_field([&] { estimate(m, test::preset_cluster("dgx-a100", 1), t, l); }) ==
        "device.peak_tflops.fp8");
  t.fp8 = Fp8Recipe::mxfp8;
  CHECK(thrown_field([&] { estimate(m, test::preset_cluster("dgx-h100", 1), t, l); }) ==
        "device.arch");
  CHECK(estimate(m, test::preset_cluster("dgx-b200", 1), t, l).step_time_s > 0);
  t.fp8 = Fp8Recipe::current;
  Profile p;
  ExecutionOptions x;
  x.profile = &p;
  CHECK(thrown_field([&] { estimate(m, test::preset_cluster("dgx-h100", 1), t, l, x); }) ==
        "training.fp8");
}
