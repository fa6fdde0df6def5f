#include "simulator/compute_model.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "simulator/execution_options.h"
#include "simulator/model_flops.h"
#include "simulator/parts_compute.h"
#include "simulator_fixtures.h"

using namespace shardplan;

TEST_CASE("model FLOPs are Narayanan et al. 2021 eq. 3 for GPT", "[compute][flops]") {
  const Model m = test::preset_model("gpt3-175b");
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 50257;
  // Without recompute: 72·B·s·l·h²·(1 + s/6h + V/12lh) (Korthikanti et al. 2022 §6).
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  CHECK(model_flops_per_step(m, 1536, 2048) == Approx(model).epsilon(1e-12));
  // With full recompute: eq. 3 as printed, 96·B·s·l·h²·(1 + s/6h + V/16lh).
  const double full = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(model + recompute_flops_per_step(m, 1536, 2048, Recompute::full) ==
        Approx(full).epsilon(1e-12));
  // Selective recompute adds QKᵀ and the product with V again: 4·B·s²·h per layer.
  CHECK(recompute_flops_per_step(m, 1536, 2048, Recompute::selective) ==
        Approx(4 * B * s * s * h * l).epsilon(1e-12));
  CHECK(recompute_flops_per_step(m, 1536, 2048, Recompute::none) == 0);
}

TEST_CASE("GEMM time is a roofline", "[compute][gemm]") {
  const DeviceRates r{.matmul_flops_per_s = 100e12,
                      .attention_forward_flops_per_s = 50e12,
                      .attention_backward_flops_per_s = 40e12,
                      .memory_bytes_per_s = 1e12};
  // 8192³: 2·8192³ = 1.0995e12 FLOPs in 10.995 ms; 3·8192²·2 B in 0.403 ms → compute-bound.
  CHECK(gemm_time_s(r, 8192, 8192, 8192, 2) ==
        Approx(2.0 * 8192 * 8192 * 8192 / 100e12).epsilon(1e-12));
  // 1×8192×8192: 1.34e8 FLOPs in 1.3 µs; (8192 + 8192² + 8192)·2 B in 134 µs → memory-bound.
  CHECK(gemm_time_s(r, 1, 8192, 8192, 2) ==
        Approx((8192.0 + 8192.0 * 8192 + 8192) * 2 / 1e12).epsilon(1e-12));
  CHECK(gemm_time_s(r, 1, 8192, 8192, 2, 3) == Approx(3 * gemm_time_s(r, 1, 8192, 8192, 2)));
}

TEST_CASE("device rates scale the peaks by the device's efficiency", "[compute][gemm]") {
  Device d;
  d.efficiency = {.matmul = 0.869,
                  .attention_forward = 0.73,
                  .attention_backward = 0.63,
                  .flash2_forward = 0.73,
                  .flash2_backward = 0.63,
                  .memory = 0.90,
                  .sm_count = 108,
                  .kernel_overhead_us = 10};
  d.peak_tflops_bf16 = 312;
  d.memory_GBps = 2039;
  const DeviceRates r = device_rates(d, Dtype::bf16);
  CHECK(r.matmul_flops_per_s == Approx(0.869 * 312e12));
  CHECK(r.memory_bytes_per_s == Approx(0.9 * 2039e9));
  CHECK(r.kernel_overhead_s == Approx(10e-6));
}

TEST_CASE("FLOPs of one micro-batch on a stage, counted by hand", "[compute][flops]") {
  const Model m = test::preset_model("gpt-tiny");
  Training t = test::training(4, 32);
  Layout l;
  l.tp = 2;
  l.micro_batch = 2;
  const DeviceRates r = test::round_rates();
  const ExecutionOptions unfused{.attention = AttentionKernel::unfused, .dropout = false};
  const MicrobatchCompute c = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, unfused);
  // gpt-tiny: h = 64, 4 heads of 16, MLP 256, vocabulary 256, 4 layers, GeLU.
  // T = 2·32 = 64 tokens, tp = 2, per layer:
  //   QKV 2·64·64·96 = 786,432; output 2·64·32·64 = 262,144; MLP 2 × 2·64·64·128 = 2,097,152;
  //   scores and P·V: 2 heads × 2 sequences × 2·32·16·32 each = 131,072 + 131,072.
  // Four layers: 4 × 3,407,872; the (tied) head 2·64·64·128 = 1,048,576.
  CHECK(c.forward[OpKind::matmul].flops == 4 * 3'407'872.0 + 1'048'576);
  // Backward: dX = dY·Wᵀ, and apart, the weight gradient dW = Xᵀ·dY: a forward's FLOPs each.
  CHECK(c.backward[OpKind::matmul].flops == c.forward[OpKind::matmul].flops);
  CHECK(c.weight_grad[OpKind::matmul].flops == c.forward[OpKind::matmul].flops);
  CHECK(c.weight_grad[OpKind::attention].flops == 0);
  CHECK(c.recompute.flops() == 0);

  // Full recompute runs the layers' forward again, not the head.
  l.recompute = Recompute::full;
  const MicrobatchCompute full = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, unfused);
  CHECK(full.recompute[OpKind::matmul].flops == 4 * 3'407'872.0);
  // Selective recompute runs the scores again, not P·V (the context is kept).
  l.recompute = Recompute::selective;
  const MicrobatchCompute sel = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, unfused);
  CHECK(sel.recompute[OpKind::matmul].flops == 4 * 131'072.0);

  // Flash attention: half of the 4·b·a·s²·d products under the causal mask, backward 2.5×.
  l.recompute = Recompute::none;
  const MicrobatchCompute flash = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, {});
  CHECK(flash.forward[OpKind::attention].flops == 4 * 0.5 * 262'144.0);
  CHECK(flash.backward[OpKind::attention].flops == 2.5 * flash.forward[OpKind::attention].flops);
}

TEST_CASE("memory-bound kernels are timed by bytes", "[compute][memory_bound]") {
  const Model m = test::preset_model("gpt-tiny");
  Training t = test::training(4, 32);
  Layout l;
  l.pp = 2;  // stage 0: two layers and the embedding, no head
  const DeviceRates r = test::round_rates();
  const MicrobatchCompute c = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, {});
  // T = 32 tokens, h = 64, 2-byte elements, no dropout, learned positions, per layer:
  //   two norms 2·2·2·32·64 = 16,384; two residual adds 2·3·2·32·64 = 24,576;
  //   GeLU 2·2·32·256 = 32,768; and once the embedding 2·2·32·64 = 8,192.
  const double forward = 2 * (16'384 + 24'576 + 32'768) + 8'192;
  CHECK(c.forward[OpKind::memory_bound].bytes == forward);
  CHECK(c.forward[OpKind::memory_bound].time_s == Approx(forward / 1e11));
}

TEST_CASE("weight gradients accumulate over the micro-batches as the framework adds them",
          "[compute][memory_bound]") {
  const Model m = test::preset_model("gpt-tiny");  // h = 64, ffn = 256, vocab 256, tied
  Training t = test::training(16, 32);
  t.grad_dtype = Dtype::fp32;
  Layout l;
  l.pp = 2;
  l.num_microbatches = 4;
  const DeviceRates r = test::round_rates();
  // Stage 0: two layers of 12·h² = 49,152 linear weights (qkv 3h², out h², fc1 and fc2 4h² each)
  // and the 256 × 64 embedding table.
  const double layer_weights = 2 * 12 * 64.0 * 64, table = 256 * 64;
  const auto added = [&](GradAccumulation mode) {
    ExecutionOptions x;
    x.grad_accumulation = mode;
    return microbatch_compute(m, t, l, stage_layers(m, l, 0), r, x)
        .weight_grad[OpKind::memory_bound]
        .bytes;
  };
  CHECK(added(GradAccumulation::in_place) == 0);
  // Megatron-Core: the GEMMs add their own; the embedding's dense gradient (zeroed, 2 bytes) is
  // added by a hook, reading it (2) and the fp32 buffer (4) and writing the buffer (4).
  CHECK(added(GradAccumulation::fused) == table * (2 + 10));
  // nanotron: every weight's gradient added each micro-batch.
  CHECK(added(GradAccumulation::hook) == layer_weights * 10 + table * (2 + 10));
  // fp32 accumulation beside bf16 gradients is a hook under AccumulateGrad too (BF16_Optimizer).
  CHECK(added(GradAccumulation::autograd) == added(GradAccumulation::hook));
  // In the compute dtype, AccumulateGrad assigns the first of the 4 micro-batches' and adds 3.
  t.grad_dtype = Dtype::bf16;
  CHECK(added(GradAccumulation::autograd) ==
        Approx((layer_weights + table) * 6 * 3 / 4 + table * 2));
  // ZeRO-2 reduces every micro-batch's gradients: each rank adds its shard.
  l.dp = 2;
  l.zero = 2;
  CHECK(added(GradAccumulation::autograd) ==
        Approx((layer_weights + table) * 6 * 3 / 4 / 2 + table * 2));
}

TEST_CASE("the loss's passes over the logits, by its kernels", "[compute][memory_bound]") {
  const Model m = test::preset_model("gpt-tiny");
  const Training t = test::training(4, 32);
  Layout l;
  l.pp = 2;  // stage 1: two layers, the final norm, the head and the loss
  const DeviceRates r = test::round_rates();
  auto bytes = [&](CrossEntropyKernel k) {
    ExecutionOptions x;
    x.cross_entropy = k;
    const MicrobatchCompute c = microbatch_compute(m, t, l, stage_layers(m, l, 1), r, x);
    return std::pair{c.forward[OpKind::memory_bound].bytes,
                     c.backward[OpKind::memory_bound].bytes};
  };
  // One micro-batch of 32 tokens over the vocabulary; bf16 logits (2 bytes), fp32 math (4).
  const double logits = 32.0 * static_cast<double>(m.vocab);
  const auto [fused_fwd, fused_bwd] = bytes(CrossEntropyKernel::fused);  // 2 + 4 each way
  const auto [megatron_fwd, megatron_bwd] = bytes(CrossEntropyKernel::megatron);
  const auto [pytorch_fwd, pytorch_bwd] = bytes(CrossEntropyKernel::pytorch);
  const auto [own_fwd, own_bwd] = bytes(CrossEntropyKernel::shardplan);
  // Megatron: cast 6, max 4, subtract 8, exp 8, sum 4, divide 8 = 38; back: scale 8, cast 6 = 14.
  CHECK(megatron_fwd - fused_fwd == Approx(logits * (38 - 6)));
  CHECK(megatron_bwd - fused_bwd == Approx(logits * (14 - 6)));
  // PyTorch: cast 6, log_softmax 3 reads and a write 16 = 22; back: nll 4, log_softmax 16,
  // cast 6 = 26.
  CHECK(pytorch_fwd - fused_fwd == Approx(logits * (22 - 6)));
  CHECK(pytorch_bwd - fused_bwd == Approx(logits * (26 - 6)));
  // The executor's: widen 6, max 4, exponentials 8 = 18; back: gradient 8, narrow 6 = 14.
  CHECK(own_fwd - fused_fwd == Approx(logits * (18 - 6)));
  CHECK(own_bwd - fused_bwd == Approx(logits * (14 - 6)));
}

TEST_CASE("optimizer step bytes", "[compute][optimizer]") {
  Training t = test::training(1, 1);
  // Mixed-precision Adam with bf16 gradients: read and write the fp32 master and both moments
  // (2·12), write the bf16 weight (2), read the gradient twice (2·2): 30 bytes per parameter.
  CHECK(optimizer_step_bytes(t, 1000) == 30'000);
  t.grad_dtype = Dtype::fp32;
  CHECK(optimizer_step_bytes(t, 1000) == 34'000);
}

TEST_CASE("the cpu executor's biases are passes of their own, kernels at the profile's rates",
          "[compute][profile]") {
  const Model m = test::preset_model("gpt-tiny");  // GPT-2: biases on qkv, out, fc1, fc2
  const Training t = with_compute_dtype(test::training(4, 64), Dtype::fp32);
  const Layout l = test::layout(1, 4, 1, 1);
  Profile p;
  p.dtype = Dtype::fp32;
  p.memory_GBps = 10;
  p.gemm = {{64, 64, 64, 0.05}};
  const double gelu_elements = 64.0 * static_cast<double>(m.ffn_hidden);  // tokens × ffn
  p.kernels = {{MemoryKernel::gelu_forward, gelu_elements, 2e8}};
  const DeviceRates rates{.matmul_flops_per_s = 1e11,
                          .attention_forward_flops_per_s = 1e11,
                          .attention_backward_flops_per_s = 1e11,
                          .memory_bytes_per_s = 10e9,
                          .profile = &p};
  const auto ops_of = [&](const ExecutionOptions& x) {
    std::vector<PricedOp> ops;
    layer_compute(m, t, l, false, rates, x, &ops);
    return ops;
  };
  const auto count = [](const std::vector<PricedOp>& ops, MemoryKernel k) {
    return std::count_if(ops.begin(), ops.end(), [k](const PricedOp& o) {
      return o.kind == OpKind::memory_bound && o.kernel == k;
    });
  };
  const std::vector<PricedOp> fused = ops_of(ExecutionOptions{});
  CHECK(count(fused, MemoryKernel::bias_forward) == 0);
  CHECK(count(fused, MemoryKernel::bias_backward) == 0);
  const std::vector<PricedOp> cpu = ops_of(cpu_executor_options());
  // Forward: the qkv and fc1 biases (out and fc2 ride in the residual add); backward: all four
  // column sums.
  CHECK(count(cpu, MemoryKernel::bias_forward) == 2);
  CHECK(count(cpu, MemoryKernel::bias_backward) == 4);
  for (const PricedOp& o : cpu) {
    if (o.kind != OpKind::memory_bound) continue;
    INFO(enum_name(o.kernel, kMemoryKernelNames));
    if (o.kernel == MemoryKernel::gelu_forward)
      CHECK(o.time_s == gelu_elements / 2e8);  // the measured rate
    else if (o.kernel == MemoryKernel::norm_forward)
      CHECK(o.time_s == Approx(o.elements * 2 * 4 / 10e9));  // not measured: bytes at 10 GB/s
  }
  // The ops add up to what the parts cost.
  const PartsCompute parts = layer_compute(m, t, l, false, rates, cpu_executor_options());
  double forward_s = 0, ops_forward_s = 0;
  for (const MicrobatchCompute& c : parts.parts) forward_s += c.forward.time_s();
  for (const PricedOp& o : cpu) ops_forward_s += o.pass == Pass::forward ? o.time_s : 0;
  CHECK(ops_forward_s == Approx(forward_s).epsilon(1e-12));
}

TEST_CASE("kernels counted by hand, and an action waits for the host only beyond its device time",
          "[compute][launch]") {
  const Model m = test::preset_model("gpt-tiny");
  Training t = test::training(4, 32);
  Layout l;
  l.pp = 2;  // stage 0: two layers and the embedding, no head
  const DeviceRates r{.matmul_flops_per_s = 1e12,
                      .attention_forward_flops_per_s = 1e12,
                      .attention_backward_flops_per_s = 1e12,
                      .flash2_forward_flops_per_s = 1e12,
                      .flash2_backward_flops_per_s = 1e12,
                      .memory_bytes_per_s = 1e11};
  ExecutionOptions x;  // flash attention, fused biases, no dropout
  x.host_s_per_kernel = 1;
  const MicrobatchCompute c = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, x);
  // Per layer going forward: norm, QKV, flash attention, output projection, residual add, norm,
  // fc1, GeLU, fc2, residual add = 10 kernels (learned positions: no RoPE); plus the embedding.
  CHECK(c.forward.kernels() == 2 * 10 + 1);
  // Backward: a GEMM for each of the four linears' input gradients, three for flash attention's
  // backward, one for each memory-bound kernel (two norms, two residual adds, GeLU), and the
  // embedding's; the weight gradients, a GEMM for each linear, and the hook that adds the
  // embedding's gradient into the accumulated one (Megatron-Core's GEMMs add their own).
  CHECK(c.backward.kernels() == 2 * (4 + 3 + 5) + 1);
  CHECK(c.weight_grad.kernels() == 2 * 4 + 1);
  CHECK(c.forward.issue_s == c.forward.kernels());

  // An action's passes settle against the host: the wait is what the host needs beyond the
  // device, never negative.
  PassCost p;
  p[OpKind::matmul].time_s = 3;
  p.issue_s = 5;
  settle_host_bound(p);
  CHECK(p.host_wait_s == 2);
  CHECK(p.time_s() == 5);
  p.issue_s = 1;
  settle_host_bound(p);
  CHECK(p.host_wait_s == 0);
  CHECK(p.time_s() == 3);
}

TEST_CASE(
    "FlashAttention-1 and -2 and the device's best kernel have their own rates, the sustained "
    "clock slows tensor cores, not memory",
    "[compute][attention]") {
  Device d;
  d.efficiency = {.matmul = 0.8,
                  .attention_forward = 0.75,
                  .attention_backward = 0.56,
                  .flash2_forward = 0.35,
                  .flash2_backward = 0.35,
                  .flash1_forward = 0.19,
                  .flash1_backward = 0.17,
                  .memory = 0.9,
                  .sm_count = 132,
                  .sustained_clock = 0.5};
  d.peak_tflops_bf16 = 1000;
  d.memory_GBps = 1000;
  const DeviceRates r = device_rates(d, Dtype::bf16);
  CHECK(r.matmul_flops_per_s == Approx(0.8 * 0.5 * 1000e12));
  CHECK(r.flash2_forward_flops_per_s == Approx(0.35 * 0.5 * 1000e12));
  CHECK(r.memory_bytes_per_s == Approx(0.9 * 1000e9));

  const Model m = test::preset_model("gpt-tiny");
  const Training t = test::training(4, 32);
  const Layout l;
  ExecutionOptions fa1, fa2, fa3;
  fa1.attention = AttentionKernel::flash1;
  fa2.attention = AttentionKernel::flash2;
  fa3.attention = AttentionKernel::flash3;
  const MicrobatchCompute c1 = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, fa1);
  const MicrobatchCompute c2 = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, fa2);
  const MicrobatchCompute c3 = microbatch_compute(m, t, l, stage_layers(m, l, 0), r, fa3);
  CHECK(c2.forward[OpKind::attention].flops == c3.forward[OpKind::attention].flops);
  CHECK(c1.backward[OpKind::attention].flops == c3.backward[OpKind::attention].flops);
  // Each launch's fixed device cost is the same whatever the kernel; the rest follows the rate.
  const auto work_s = [&](const MicrobatchCompute& c, bool forward) {
    const KindCost& k = (forward ? c.forward : c.backward)[OpKind::attention];
    return k.time_s - k.kernels * r.kernel_overhead_s;
  };
  CHECK(work_s(c2, true) == Approx(work_s(c3, true) * 0.75 / 0.35));
  CHECK(work_s(c1, true) == Approx(work_s(c3, true) * 0.75 / 0.19));
  CHECK(work_s(c1, false) == Approx(work_s(c3, false) * 0.56 / 0.17));
}
