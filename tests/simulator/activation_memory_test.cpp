#include "simulator/activation_memory.h"

#include <catch2/catch.hpp>

#include "simulator/pipeline_model.h"
#include "simulator_fixtures.h"
#include "tests/core/reshaped_model.h"

using namespace shardplan;

namespace {

// GPT-3 175B as Korthikanti et al. 2022 run it: s = 2048, b = 1, h = 12288, a = 96, with dropout
// and without flash attention (the paper predates it).
constexpr int64_t kSbh = 2048 * 12288;  // 25,165,824; 5as/h = 5·96·2048/12288 = 80

int64_t korthikanti(int tp, bool sp, Recompute r) {
  const Model m = test::preset_model("gpt3-175b");
  const RankShape shape{2048, 2048, 1, tp, sp};
  return layer_activation_bytes(
      m, Dtype::bf16, shape, false, r,
      ExecutionOptions{.attention = AttentionKernel::unfused, .dropout = true}, Fp8Recipe::none);
}

}  // namespace

TEST_CASE("Korthikanti et al. 2022 Table 2: activation memory per layer", "[memory][activations]") {
  // no parallelism: sbh(34 + 5as/h) = 114·sbh
  CHECK(korthikanti(1, false, Recompute::none) == 114 * kSbh);
  // tensor parallel, t = 8: sbh(10 + 24/t + 5as/(ht)) = sbh(10 + 3 + 10) = 23·sbh
  CHECK(korthikanti(8, false, Recompute::none) == 23 * kSbh);
  // tensor + sequence parallel: sbh/t·(34 + 5as/h) = 114·sbh/8
  CHECK(korthikanti(8, true, Recompute::none) == 114 * kSbh / 8);
  // tensor parallel + selective recompute: sbh(10 + 24/t) = 13·sbh
  CHECK(korthikanti(8, false, Recompute::selective) == 13 * kSbh);
  // tensor + sequence parallel + selective recompute: 34·sbh/t
  CHECK(korthikanti(8, true, Recompute::selective) == 34 * kSbh / 8);
  // full recompute: 2sbh (the layer input), a sequence shard of it under SP
  CHECK(korthikanti(8, false, Recompute::full) == 2 * kSbh);
  CHECK(korthikanti(8, true, Recompute::full) == 2 * kSbh / 8);
}

TEST_CASE("flash attention removes the s² term and keeps the log-sum-exp",
          "[memory][activations]") {
  const Model m = test::preset_model("gpt3-175b");
  const RankShape shape{2048, 2048, 1, 8, true};
  const int64_t flash = layer_activation_bytes(
      m, Dtype::bf16, shape, false, Recompute::none,
      ExecutionOptions{.attention = AttentionKernel::flash3, .dropout = true}, Fp8Recipe::none);
  // 34·sbh/8 + fp32 statistics of 96/8 heads × 2048 queries
  CHECK(flash == 34 * kSbh / 8 + 4 * 12 * 2048);
}

TEST_CASE("activation memory of a Llama layer: GQA, SwiGLU, no dropout, flash",
          "[memory][activations]") {
  const Model m = test::preset_model("llama3-8b");
  const RankShape shape{8192, 8192, 1, 8, true};
  // tp = 8: 4 query heads (512 wide), 1 kv head (128 wide), 1792 MLP units; 1024 tokens per
  // sequence shard.
  //   norm inputs  2·2·1024·4096    = 16,777,216
  //   QKV input    2·1024·4096      =  8,388,608
  //   Q, K         2·8192·(512+128) = 10,485,760
  //   V            2·8192·128       =  2,097,152
  //   proj input   2·8192·512       =  8,388,608
  //   log-sum-exp  4·4·8192         =    131,072
  //   MLP input    2·1024·4096      =  8,388,608
  //   SwiGLU       2·8192·3·1792    = 88,080,384
  CHECK(layer_activation_bytes(m, Dtype::bf16, shape, false, Recompute::none, {},
                               Fp8Recipe::none) == 142'737'408);
  // Eager silu(gate)·up also keeps silu's output: one more 2·8192·1792.
  CHECK(layer_activation_bytes(m, Dtype::bf16, shape, false, Recompute::none,
                               ExecutionOptions{.fused_swiglu = false},
                               Fp8Recipe::none) == 142'737'408 + 2 * 8192 * 1792);
}

TEST_CASE("a layer's backward holds the gradient in, the input's and the MLP's",
          "[memory][activations]") {
  // The 1.3B GPT the CUDA executor ran on an H100 (GELU, h 2048, ffn 8192; 16 × 1024 tokens,
  // bf16): at its peak it held 402,784,256 B beside the activations, the head's input gradient and
  // the layer input's (64 MiB each), the MLP activation's (256 MiB) and the head's row sums
  // (2 × 16384 fp32: the loss's, not the layer's).
  const Model gpt = test::preset_model("gpt3-175b");
  const Model xl = test::reshaped(gpt, "gpt-xl", 24, 2048, 16, 128, 8192);
  const RankShape one_gpu{1024, 1024, 16, 1, false};
  CHECK(layer_backward_buffers(xl, Dtype::bf16, one_gpu, false).total() ==
        402'784'256 - 2 * 16384 * 4);
  // SwiGLU: fc1's output gradient is gate and up, twice the activation's; tp splits the MLP, and
  // sequence parallelism the two hidden-wide gradients.
  const Model llama = test::preset_model("llama3-8b");
  const RankShape tp8{8192, 8192, 1, 8, true};
  CHECK(layer_backward_buffers(llama, Dtype::bf16, tp8, false).total() ==
        2 * (2 * 1024 * 4096 + 8192 * 2 * 1792));
}

TEST_CASE("nanotron's multi-head attention holds K and V twice, GQA once",
          "[memory][activations]") {
  const RankShape shape{4096, 4096, 1, 2, true};
  const ExecutionOptions copied{.mha_kv_copied = true};
  // Llama 2 7B: 32 K/V heads of 128 as many as Q heads; tp = 2 keeps 16 of them, 2048 wide.
  const Model mha = test::preset_model("llama2-7b");
  CHECK(layer_activation_bytes(mha, Dtype::bf16, shape, false, Recompute::none, copied,
                               Fp8Recipe::none) == layer_activation_bytes(mha, Dtype::bf16, shape,
                                                                          false, Recompute::none,
                                                                          {}, Fp8Recipe::none) +
                                                       2 * (2 * 4096 * 2048));
  const Model gqa = test::preset_model("llama3-8b");
  CHECK(layer_activation_bytes(gqa, Dtype::bf16, shape, false, Recompute::none, copied,
                               Fp8Recipe::none) == layer_activation_bytes(gqa, Dtype::bf16, shape,
                                                                          false, Recompute::none,
                                                                          {}, Fp8Recipe::none));
}

TEST_CASE("an MoE layer keeps top_k copies of each token", "[memory][activations]") {
  const Model m = test::preset_model("mixtral-8x7b");
  const RankShape shape{4096, 4096, 1, 1, false};
  const int64_t dense =
      layer_activation_bytes(m, Dtype::bf16, shape, false, Recompute::none, {}, Fp8Recipe::none);
  const int64_t moe =
      layer_activation_bytes(m, Dtype::bf16, shape, true, Recompute::none, {}, Fp8Recipe::none);
  // 2 copies × 4096 tokens × (4096 input + 3·14336 activations) × 2 bytes, instead of
  // 4096 × 3·14336 × 2 for one dense MLP.
  CHECK(moe - dense == 2 * 2 * 4096 * (4096 + 3 * 14336) - 2 * 4096 * 3 * 14336);
}

TEST_CASE("input and output layers, logits", "[memory][activations]") {
  const Model m = test::preset_model("gpt3-175b");
  const RankShape shape{2048, 2048, 1, 8, true};
  // Korthikanti §4.3 with SP: embedding dropout mask sbh/t; final norm and head inputs 4sbh/t;
  // fp32 logits 4sbv/t with v/t = ceil(50257/8) = 6283.
  CHECK(input_layer_activation_bytes(
            m, shape, ExecutionOptions{.attention = AttentionKernel::unfused, .dropout = true}) ==
        kSbh / 8);
  CHECK(input_layer_activation_bytes(
            m, shape, ExecutionOptions{.attention = AttentionKernel::unfused, .dropout = false}) ==
        0);
  CHECK(output_layer_activation_bytes(m, Dtype::bf16, shape) == 4 * kSbh / 8);
  const int64_t logits = 2048 * 6283;
  const LossMemory fused = loss_memory(m, Dtype::bf16, shape, CrossEntropyKernel::fused);
  CHECK(fused.saved == 4 * logits);
  CHECK(fused.transient == 2 * logits);
  CHECK(loss_memory(m, Dtype::bf16, shape, CrossEntropyKernel::megatron) == fused);
  // The cast beside an out-of-place softmax: a second fp32 copy while the loss runs, none when
  // the logits are fp32 already.
  const LossMemory nanotron = loss_memory(m, Dtype::bf16, shape, CrossEntropyKernel::nanotron);
  CHECK(nanotron.saved == 4 * logits);
  CHECK(nanotron.transient == (2 + 4) * logits);
  CHECK(loss_memory(m, Dtype::bf16, shape, CrossEntropyKernel::pytorch) == nanotron);
  CHECK(loss_memory(m, Dtype::fp32, shape, CrossEntropyKernel::pytorch).transient == 4 * logits);
}

TEST_CASE("micro-batches in flight per schedule", "[memory][pipeline]") {
  Layout l;
  l.pp = 4;
  l.num_microbatches = 8;
  l.schedule = Schedule::gpipe;
  CHECK(inflight_chunk_microbatches(l, 0) == 8);
  CHECK(inflight_chunk_microbatches(l, 3) == 8);
  l.schedule = Schedule::one_f_one_b;  // p − stage
  CHECK(inflight_chunk_microbatches(l, 0) == 4);
  CHECK(inflight_chunk_microbatches(l, 2) == 2);
  CHECK(inflight_chunk_microbatches(l, 3) == 1);
  l.num_microbatches = 2;  // fewer micro-batches than stages: all of them
  CHECK(inflight_chunk_microbatches(l, 0) == 2);
  l.num_microbatches = 8;
  l.schedule = Schedule::interleaved;
  l.vpp = 2;
  // First stage: p·v + p − 1 = 11 chunk micro-batches = p·(1 + (p − 1)/(p·v)) = 5.5 stages' worth
  // (Korthikanti §4.2.3); last stage: (v − 1)·p + 1 = 5.
  CHECK(inflight_chunk_microbatches(l, 0) == 11);
  CHECK(inflight_chunk_microbatches(l, 3) == 5);
  // As many micro-batches as stages: Megatron-LM runs all m·v forwards before any backward.
  l.num_microbatches = 4;
  CHECK(inflight_chunk_microbatches(l, 0) == 8);
  CHECK(inflight_chunk_microbatches(l, 3) == 8);
}

TEST_CASE("a split backward's layer holds each linear's input and output gradient until its W",
          "[memory][activations]") {
  // GPT-3 175B layer (MHA, h = 12288, ffn = 4h, GeLU), bf16: QKV 2sbh in + 6sbh out, projection
  // 2sbh + 2sbh, fc1 2sbh + 8sbh, fc2 8sbh + 2sbh = 32·sbh without tp, against the 34·sbh (plus
  // the s² terms) the layer keeps from its forward; under tp = 8 each output or input that tp
  // splits is an eighth, and under SP the inputs and gradients W reads are gathered (all tokens).
  const Model m = test::preset_model("gpt3-175b");
  const auto bytes = [&](int tp, bool sp) {
    return layer_weight_grad_tensors(m, Dtype::bf16, RankShape{2048, 2048, 1, tp, sp}, false,
                                     Fp8Recipe::none)
        .total();
  };
  CHECK(bytes(1, false) == 32 * kSbh);
  // tp = 8: QKV 2 + 6/8, projection 2/8 + 2, fc1 2 + 8/8, fc2 8/8 + 2 = 11·sbh.
  CHECK(bytes(8, false) == 11 * kSbh);
  CHECK(bytes(8, true) == bytes(8, false));
}
