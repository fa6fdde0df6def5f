#include "simulator/memory_model.h"

#include <catch2/catch.hpp>

#include "core/param_shard.h"
#include "simulator/activation_memory.h"
#include "simulator/allocator_replay.h"
#include "simulator/rank_shape.h"
#include "simulator_fixtures.h"
#include "tests/core/odd_model.h"

using namespace shardplan;

namespace {

Training mixed_precision_adam() {
  Training t = test::training(64, 2048);
  t.dtype = Dtype::bf16;
  t.grad_dtype = Dtype::bf16;
  t.master_weights = true;
  t.optimizer = Optimizer::adam;
  return t;
}

// Sequences short enough that the step's copies of the gradients outweigh what a backward frees.
Training short_sequences(Dtype dtype, Dtype grad_dtype) {
  Training t = mixed_precision_adam();
  t.dtype = dtype;
  t.grad_dtype = grad_dtype;
  t.seq_len = 128;
  return t;
}

// llama3-8b on an H100 with short sequences: where the step's transients show in the peak.
struct StepCase {
  Model m = test::preset_model("llama3-8b");
  Training t;
  Device d = test::preset_cluster("dgx-h100", 1).device;
};
StepCase step_case(Dtype dtype, Dtype grad_dtype) {
  return {.t = short_sequences(dtype, grad_dtype)};
}

}  // namespace

TEST_CASE("ZeRO paper example: 7.5B parameters, Nd = 64, mixed-precision Adam", "[memory][zero]") {
  // Rajbhandari et al. 2020 Figure 1: (2 + 2 + K)·Ψ with K = 12, Ψ = 7.5e9, Nd = 64.
  const Training t = mixed_precision_adam();
  const int64_t psi = 7'500'000'000;  // 7.5e9 / 64 = 117,187,500 exactly
  // stage 0: 16Ψ = 120e9
  CHECK(model_state_bytes(psi, shard_size(psi, 64), 0, t).total() == 120'000'000'000);
  // stage 1: 2Ψ + 2Ψ + 12Ψ/64 = 30e9 + 1.40625e9 = 31.40625e9 ("31.4 GB")
  CHECK(model_state_bytes(psi, shard_size(psi, 64), 1, t).total() == 31'406'250'000);
  // stage 2: 2Ψ + (2 + 12)Ψ/64 = 15e9 + 1.640625e9 ("16.6 GB")
  CHECK(model_state_bytes(psi, shard_size(psi, 64), 2, t).total() == 16'640'625'000);
  // stage 3: 16Ψ/64 = 1.875e9 ("1.9 GB")
  CHECK(model_state_bytes(psi, shard_size(psi, 64), 3, t).total() == 1'875'000'000);

  const ModelStateBytes s1 = model_state_bytes(psi, shard_size(psi, 64), 1, t);
  CHECK(s1.parameters == 15'000'000'000);
  CHECK(s1.gradients == 15'000'000'000);
  CHECK(s1.master_weights == 4 * 117'187'500);
  CHECK(s1.optimizer_moments == 8 * 117'187'500);
}

TEST_CASE("ZeRO pads a partition that does not divide", "[memory][zero]") {
  const Training t = mixed_precision_adam();
  // 10 parameters over 4 ranks: ceil(10/4) = 3 each.
  const ModelStateBytes s = model_state_bytes(10, shard_size(10, 4), 3, t);
  CHECK(s.parameters == 2 * 3);
  CHECK(s.gradients == 2 * 3);
  CHECK(s.optimizer() == 12 * 3);
}

TEST_CASE("ZeRO pads each unit on its own, as the executor shards it", "[memory][zero]") {
  // tests/core/zero_units_test.cpp: odd_model's 117,621 parameters, 3 odd layers. fp32 Adam over
  // dp = 2: ZeRO-3 shards each unit (58,812 elements a rank), ZeRO-1 its one bucket (58,811).
  Training t = mixed_precision_adam();
  t.dtype = t.grad_dtype = Dtype::fp32;
  t.master_weights = false;
  const Model m = test::odd_model();
  Layout l = test::layout(2, 2, 1, 1, 1, 3);  // dp = 2
  const StageLayers s = stage_layers(m, l, 0);
  const ModelStateBytes zero3 = stage_model_state_bytes(m, t, l, s);
  CHECK(zero3.parameters == 4 * 58'812);
  CHECK(zero3.gradients == 4 * 58'812);
  CHECK(zero3.optimizer() == 8 * 58'812);
  l.zero = 1;
  const ModelStateBytes zero1 = stage_model_state_bytes(m, t, l, s);
  CHECK(zero1.parameters == 4 * 117'621);
  CHECK(zero1.optimizer() == 8 * 58'811);
}

TEST_CASE("fp32 training keeps no master copy, SGD no moments", "[memory][zero]") {
  Training t = mixed_precision_adam();
  t.dtype = Dtype::fp32;
  t.grad_dtype = Dtype::fp32;
  CHECK(model_state_bytes(100, 100, 0, t).master_weights == 0);
  CHECK(model_state_bytes(100, 100, 0, t).total() == 100 * (4 + 4 + 8));
  t.optimizer = Optimizer::sgd;
  CHECK(model_state_bytes(100, 100, 0, t).total() == 100 * (4 + 4));
}

TEST_CASE("stage shards of one tensor-parallel rank add up to the model", "[memory][shard]") {
  for (const char* name : {"llama3-8b", "gpt3-175b", "mixtral-8x7b", "llama3-405b"}) {
    const Model m = test::preset_model(name);
    const ParamCounts counts = count_parameters(m);
    Layout l;
    CHECK(param_shard(m, l, stage_layers(m, l, 0)).total() == counts.total());

    // Pipeline stages partition the layers; a tied head adds the last stage's copy.
    l.pp = 2;
    int64_t sum = 0;
    for (int s = 0; s < l.pp; ++s) sum += param_shard(m, l, stage_layers(m, l, s)).total();
    CHECK(sum == counts.total() + (m.tied_embeddings ? m.vocab * m.hidden : 0));
  }
}

TEST_CASE("tensor parallelism splits weights and keeps row-parallel biases and norms whole",
          "[memory][shard]") {
  const Model m = test::preset_model("gpt3-175b");  // biases everywhere, LayerNorm, tied
  // Attention on 8 ranks: q,k,v weights 12288 × 36864/8 = 12288 × 4608 and their biases 4608;
  // output projection 1536 × 12288, its bias 12288 whole.
  CHECK(attention_params_shard(m, 8) == 12288 * 4608 + 4608 + 1536 * 12288 + 12288);
  // MLP: up 12288 × 6144 + 6144, down 6144 × 12288 + 12288.
  CHECK(mlp_params_shard(m, m.ffn_hidden, 8) == 12288 * 6144 + 6144 + 6144 * 12288 + 12288);
  // Summed over the 8 ranks the replicated biases count 8 times.
  CHECK(8 * attention_params_shard(m, 8) == attention_params_per_layer(m) + 7 * 12288);
  CHECK(8 * mlp_params_shard(m, m.ffn_hidden, 8) == mlp_params_per_layer(m) + 7 * 12288);

  // Llama 3 8B (GQA, SwiGLU, no biases): everything divides by 8.
  const Model llama = test::preset_model("llama3-8b");
  CHECK(8 * attention_params_shard(llama, 8) == attention_params_per_layer(llama));
  CHECK(8 * mlp_params_shard(llama, llama.ffn_hidden, 8) == mlp_params_per_layer(llama));

  // Vocab-parallel embedding on the first stage: ceil(50257 / 8) = 6283 rows, plus the 2048
  // learned positions, replicated. The tied head's copy sits on the last stage.
  Layout l;
  l.tp = 8;
  l.pp = 8;
  const ParamShard first = param_shard(m, l, stage_layers(m, l, 0));
  CHECK(first.embedding == 6283 * 12288 + 2048 * 12288);
  CHECK(first.head == 0);
  const ParamShard last = param_shard(m, l, stage_layers(m, l, 7));
  CHECK(last.embedding == 0);
  CHECK(last.head == 6283 * 12288);
  CHECK(last.norms == 12 * 2 * 2 * 12288 + 2 * 12288);  // 12 layers × 2 LayerNorms + final
}

TEST_CASE("interleaved stages take every pp-th chunk", "[memory][shard]") {
  Model m = test::preset_model("mixtral-8x7b");
  m.moe.layer_freq = 2;  // layers 1, 3, 5, ... are MoE
  Layout l;
  l.pp = 4;
  l.vpp = 2;  // 8 chunks of 4 layers; stage 1 holds layers 4–7 and 20–23
  const StageLayers s = stage_layers(m, l, 1);
  CHECK(s.layers() == 8);
  CHECK(s.moe_layers == 4);
  CHECK_FALSE(s.first);
  CHECK_FALSE(s.last);
}

TEST_CASE("expert parallelism shares the experts, ZeRO divides them over dp/ep",
          "[memory][shard]") {
  const Model m = test::preset_model("mixtral-8x7b");
  const Training t = mixed_precision_adam();
  Layout l;
  l.dp = 8;
  l.ep = 8;
  l.zero = 1;
  const StageLayers s = stage_layers(m, l, 0);
  const ParamShard p = param_shard(m, l, s);
  // One expert per rank per layer: 3 × 4096 × 14336 each, 32 layers.
  CHECK(p.experts == 32 * 3 * int64_t{4096} * 14336);
  // dp/ep = 1: the experts' optimizer state is not divided; the dense part is divided by 8.
  const RankMemory r = rank_memory(m, t, l, s, test::preset_cluster("dgx-h100", 1).device, {});
  CHECK(r.state.optimizer_moments == 8 * p.experts + 8 * shard_size(p.dense(), 8));
}

TEST_CASE("doubling dp halves the optimizer state under ZeRO-1", "[memory][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = mixed_precision_adam();
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  Layout l = test::layout(16, 64, 2, 1, 1, 1);  // dp = 8
  const StageLayers s = stage_layers(m, l, 0);
  const RankMemory dp8 = rank_memory(m, t, l, s, d, {});
  l.dp = 16;
  const RankMemory dp16 = rank_memory(m, t, l, s, d, {});
  // 8,030,261,248 parameters, of which the 65 RMSNorms (65 × 4096 = 266,240) are replicated on
  // both tp ranks: 4,015,263,744 per rank, which 16 divides: 250,953,984 per rank, 12 bytes each.
  const int64_t per_tp_rank = param_shard(m, l, s).total();
  CHECK(per_tp_rank == (count_parameters(m).total() + 266'240) / 2);
  CHECK(dp16.state.optimizer() == 12 * per_tp_rank / 16);
  CHECK(dp8.state.optimizer() == 2 * dp16.state.optimizer());
  CHECK(dp8.state.parameters == dp16.state.parameters);
  CHECK(dp8.state.gradients == dp16.state.gradients);
}

TEST_CASE("a layout that does not fit names the item that overflows", "[memory][fit]") {
  const Model m = test::preset_model("gpt3-175b");
  const Training t = mixed_precision_adam();
  const Device d = test::preset_cluster("dgx-a100", 1).device;  // 80 GiB, 1.5 GiB reserved
  Layout l;
  const RankMemory r = rank_memory(m, t, l, stage_layers(m, l, 0), d, {});
  CHECK_FALSE(r.fits());
  const auto overflow = first_overflow(r);
  REQUIRE(overflow);
  // 175B bf16 parameters need 2 bytes each; 78.5 GiB are left after the reserve.
  CHECK(overflow->item == "parameters");
  CHECK(overflow->needed_bytes == 2 * count_parameters(m).total());
  CHECK(overflow->free_bytes == int64_t{157} * 512 * 1024 * 1024);

  // Llama 3 8B on 8 ranks with ZeRO-3 fits its state (16 bytes × 8,030,261,248 / 8 = 16.06e9),
  // but 16 sequences of 8192 tokens of activations do not.
  const Model llama = test::preset_model("llama3-8b");
  Training long_seq = mixed_precision_adam();
  long_seq.seq_len = 8192;
  Layout big = test::layout(8, 128, 1, 1, 16, 3);
  const RankMemory a = rank_memory(llama, long_seq, big, stage_layers(llama, big, 0), d, {});
  const auto o = first_overflow(a);
  REQUIRE(o);
  CHECK(o->item == "layer_activations");
  CHECK(a.state.total() == int64_t{16} * 1'003'782'656);
}

TEST_CASE("ZeRO-3 gather buffers and ZeRO-2 gradient bucket", "[memory][zero]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = mixed_precision_adam();
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  Layout l = test::layout(8, 64, 1, 1, 1, 3);
  const StageLayers s = stage_layers(m, l, 0);
  // The largest unit is the embedding (and the head): 128,256 × 4096 = 525,336,576 parameters,
  // more than a layer (41,943,040 attention + 176,160,768 MLP + 8192 norms). Two of them gathered
  // in bf16 and one's bf16 gradients: 6 bytes each.
  CHECK(rank_memory(m, t, l, s, d, {}).zero3_gathered_bytes == int64_t{6} * 525'336'576);
  CHECK(rank_memory(m, t, l, s, d, {}).comm_buffer_bytes == 0);
  // ZeRO-2: one bucket of max(40M, 1M·8) bf16 gradients awaits its reduce-scatter.
  l.zero = 2;
  CHECK(rank_memory(m, t, l, s, d, {}).comm_buffer_bytes == 2 * 40'000'000);
  CHECK(rank_memory(m, t, l, s, d, {}).zero3_gathered_bytes == 0);
}

TEST_CASE(
    "gradients held to the backward's end raise the peak by what exceeds the freed "
    "activations",
    "[memory]") {
  const Model m = test::preset_model("llama3-8b");
  Training t = mixed_precision_adam();
  t.grad_dtype = Dtype::fp32;  // accumulated in fp32: autograd's bf16 gradients are a second set
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  const Layout l = test::layout(1, 1, 1, 1);
  const StageLayers s = stage_layers(m, l, 0);
  const ExecutionOptions held{.param_grads_held = true};
  // Short sequences: 16 GB of bf16 gradients outweigh what one micro-batch's backward frees.
  t.seq_len = 128;
  const RankMemory r = rank_memory(m, t, l, s, d, held);
  const int64_t freed = r.layer_activations_bytes + r.embedding_activations_bytes +
                        r.output_activations_bytes + r.logits_bytes;
  CHECK(r.param_grads_bytes == r.state.parameters - freed);
  CHECK(r.param_grads_bytes > r.state.parameters / 2);
  CHECK(rank_memory(m, t, l, s, d, {}).param_grads_bytes == 0);
  // bf16 gradients are the buffer itself: nothing is held twice.
  Training same = t;
  same.grad_dtype = Dtype::bf16;
  CHECK(rank_memory(m, same, l, s, d, held).param_grads_bytes == 0);
  // Long sequences: the micro-batch's activations freed exceed the gradients.
  t.seq_len = 8192;
  CHECK(rank_memory(m, t, l, s, d, held).param_grads_bytes == 0);
  // The first of two stages holds two micro-batches; one backward frees one of them.
  t.seq_len = 128;
  const Layout pp2 = test::layout(2, 4, 1, 2);
  const StageLayers first = stage_layers(m, pp2, 0);
  const RankMemory held2 = rank_memory(m, t, pp2, first, d, held);
  REQUIRE(held2.inflight_microbatches == 2);
  CHECK(held2.param_grads_bytes ==
        held2.state.parameters -
            (held2.layer_activations_bytes + held2.embedding_activations_bytes) / 2 -
            held2.backward_buffers_bytes);
  CHECK(held2.peak_bytes() - rank_memory(m, t, pp2, first, d, {}).peak_bytes() ==
        held2.param_grads_bytes);
}

TEST_CASE("a stage's first backward holds the layer's gradients, the last stage's loss frees more",
          "[memory]") {
  const Model m = test::preset_model("llama3-8b");
  const Training t = mixed_precision_adam();
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  const Layout pp2 = test::layout(2, 4, 1, 2);
  const RankShape shape = rank_shape(t, pp2);
  const RankMemory first = rank_memory(m, t, pp2, stage_layers(m, pp2, 0), d, {});
  CHECK(first.backward_buffers_bytes == layer_backward_buffers(m, t.dtype, shape, false).total());
  CHECK(first.backward_buffers_bytes > 0);
  // The last stage's 128K-word loss buffers, freed before its layers' backward, exceed them.
  const RankMemory last = rank_memory(m, t, pp2, stage_layers(m, pp2, 1), d, {});
  CHECK(last.logits_bytes > first.backward_buffers_bytes);
  CHECK(last.backward_buffers_bytes == 0);
  // A small vocabulary frees less: the excess is the item.
  Model bytes = m;
  bytes.vocab = 256;
  const RankMemory small = rank_memory(bytes, t, pp2, stage_layers(bytes, pp2, 1), d, {});
  const LossMemory loss = loss_memory(bytes, t.dtype, shape, ExecutionOptions{}.cross_entropy);
  CHECK(small.backward_buffers_bytes ==
        layer_backward_buffers(bytes, t.dtype, shape, false).total() -
            output_layer_activation_bytes(bytes, t.dtype, shape) - loss.saved - loss.transient);
}

TEST_CASE(
    "DeepSpeed's optimizer step copies the gradients to fp32: the peak grows by what exceeds the "
    "freed activations",
    "[memory]") {
  const auto [m, t, d] = step_case(Dtype::fp16, Dtype::fp16);
  const ExecutionOptions copies{.step_grad_copy = true};
  const auto freed = [](const RankMemory& r) {
    return r.activations_bytes() + r.logits_bytes + r.backward_buffers_bytes;
  };
  // ZeRO-1 on one rank: the flat fp16 copy and its fp32 cast beside the gradients, 6 bytes per
  // parameter (stage_1_and_2.py step).
  const Layout zero1 = test::layout(1, 8, 1, 1, 1, 1);
  const StageLayers s = stage_layers(m, zero1, 0);
  const RankMemory r1 = rank_memory(m, t, zero1, s, d, copies);
  const int64_t params = r1.state.parameters / 2;
  CHECK(step_grad_copy_extra_bytes(t, zero1, r1.state, copies) == 6 * params);
  CHECK(r1.step_grad_copy_bytes == 6 * params - freed(r1));
  CHECK(r1.peak_bytes() - rank_memory(m, t, zero1, s, d, {}).peak_bytes() ==
        r1.step_grad_copy_bytes);
  // ZeRO-0 (FP16_Optimizer): an fp32 cast of every gradient, then their concatenation; bf16 at
  // ZeRO-0 runs the BF16_Optimizer, which copies nothing.
  const Layout zero0 = test::layout(1, 8, 1, 1, 1, 0);
  const ModelStateBytes s0 = rank_memory(m, t, zero0, s, d, copies).state;
  CHECK(step_grad_copy_extra_bytes(t, zero0, s0, copies) == 8 * params);
  Training bf16 = t;
  bf16.dtype = Dtype::bf16;
  bf16.grad_dtype = Dtype::bf16;
  CHECK(step_grad_copy_extra_bytes(bf16, zero0, s0, copies) == 0);
  CHECK(step_grad_copy_extra_bytes(bf16, zero1, r1.state, copies) == 6 * params);
  // ZeRO-1 over 4 ranks frees the gradients outside the quarter it updates first:
  // 2·P/4 kept + 6·P/4 copies, no more than the 2·P of gradients the backward held.
  const Layout dp4 = test::layout(4, 8, 1, 1, 1, 1);
  const RankMemory r4 = rank_memory(m, t, dp4, s, d, copies);
  CHECK(step_grad_copy_extra_bytes(t, dp4, r4.state, copies) == 0);
  CHECK(r4.step_grad_copy_bytes == 0);
  // ZeRO-2 keeps only the partition's gradients: the copies are 6 bytes per partition element.
  const Layout zero2 = test::layout(4, 8, 1, 1, 1, 2);
  const ModelStateBytes s2 = rank_memory(m, t, zero2, s, d, copies).state;
  CHECK(step_grad_copy_extra_bytes(t, zero2, s2, copies) == 6 * (s2.master_weights / 4));
  // No copy: frameworks whose master weights read a buffer, fp32 gradients (the BF16
  // optimizer's), ZeRO-3, long sequences whose freed activations exceed it.
  CHECK(rank_memory(m, t, zero1, s, d, {}).step_grad_copy_bytes == 0);
  Training fp32_grads = t;
  fp32_grads.grad_dtype = Dtype::fp32;
  CHECK(rank_memory(m, fp32_grads, zero1, s, d, copies).step_grad_copy_bytes == 0);
  const Layout zero3 = test::layout(4, 8, 1, 1, 1, 3);
  CHECK(rank_memory(m, t, zero3, s, d, copies).step_grad_copy_bytes == 0);
  Training long_seq = t;
  long_seq.seq_len = 65536;
  const RankMemory big = rank_memory(m, long_seq, zero1, s, d, copies);
  CHECK(freed(big) > 6 * params);
  CHECK(big.step_grad_copy_bytes == 0);
}

TEST_CASE(
    "nanotron's ZeRO-1 parameter all-gather flattens: a copy of the parameters and the shard "
    "beside them after the step",
    "[memory]") {
  const auto [m, t, d] = step_case(Dtype::bf16, Dtype::fp32);
  const ExecutionOptions flattens{.param_gather_copy = true};
  const Layout dp4 = test::layout(4, 8, 1, 1, 1, 1);
  const StageLayers s = stage_layers(m, dp4, 0);
  const RankMemory r = rank_memory(m, t, dp4, s, d, flattens);
  const int64_t params = r.state.parameters;
  const ParamGatherCopy g = param_gather_copy(dp4, r.state, flattens);
  CHECK(g.input == params / 4);
  CHECK(g.outputs == params);
  CHECK(g.members == 4);
  CHECK(step_grad_copy_extra_bytes(t, dp4, r.state, flattens) == params + params / 4);
  CHECK(r.step_grad_copy_bytes == params + params / 4 - r.activations_bytes() - r.logits_bytes -
                                      r.backward_buffers_bytes - r.param_grads_bytes);
  CHECK(r.peak_bytes() - rank_memory(m, t, dp4, s, d, {}).peak_bytes() == r.step_grad_copy_bytes);
  // Longer sequences over tp = 4 (so that the state fits beside them) free more at the step than
  // the copy takes, so the peak stays; but the activations' cached blocks are smaller than a
  // quarter of the parameters, so the copy's blocks are reserved beside them.
  Training longer = t;
  longer.seq_len = 8192;
  const Layout tp4 = test::layout(16, 8, 4, 1, 1, 1);
  const StageLayers s4 = stage_layers(m, tp4, 0);
  std::vector<RankMemory> with{rank_memory(m, longer, tp4, s4, d, flattens)};
  std::vector<RankMemory> without{rank_memory(m, longer, tp4, s4, d, {})};
  CHECK(with[0].step_grad_copy_bytes == 0);
  CHECK(with[0].peak_bytes() == without[0].peak_bytes());
  add_allocator_cache(with, m, longer, tp4, flattens);
  add_allocator_cache(without, m, longer, tp4, {});
  CHECK(with[0].fits());
  CHECK(with[0].allocator_cache_bytes > without[0].allocator_cache_bytes);
  // Nothing to gather: one rank, ZeRO-0 (every rank updates everything), ZeRO-3 (its per-unit
  // gathers before use).
  for (const Layout& l : {test::layout(1, 8, 1, 1, 1, 1), test::layout(4, 8, 1, 1, 1, 0),
                          test::layout(4, 8, 1, 1, 1, 3)})
    CHECK(param_gather_copy(l, rank_memory(m, t, l, s, d, flattens).state, flattens).outputs == 0);
}

TEST_CASE(
    "DeepSpeed's ZeRO-1 under pipeline parallelism reduces through a bucket made after the last "
    "backward",
    "[memory]") {
  const auto [m, t, d] = step_case(Dtype::fp16, Dtype::fp16);
  const ExecutionOptions bucket{.reduce_bucket_elements = 500'000'000};
  const Layout pp2 = test::layout(8, 8, 1, 2, 1, 1);
  CHECK(pipeline_reduce_bucket_bytes(t, pp2, bucket) == 1'000'000'000);
  const StageLayers s = stage_layers(m, pp2, 0);
  const RankMemory r = rank_memory(m, t, pp2, s, d, bucket);
  CHECK(step_grad_copy_extra_bytes(t, pp2, r.state, bucket) == 1'000'000'000);
  CHECK(r.step_grad_copy_bytes == 1'000'000'000 - r.activations_bytes() - r.logits_bytes -
                                      r.backward_buffers_bytes - r.param_grads_bytes);
  // None without pipeline parallelism (the gradient hooks fill it during the backward), at
  // ZeRO-0, or with fp32 gradient accumulation (DeepSpeed's BF16_Optimizer).
  CHECK(pipeline_reduce_bucket_bytes(t, test::layout(8, 8, 1, 1, 1, 1), bucket) == 0);
  CHECK(pipeline_reduce_bucket_bytes(t, test::layout(8, 8, 1, 2, 1, 0), bucket) == 0);
  CHECK(pipeline_reduce_bucket_bytes(short_sequences(Dtype::bf16, Dtype::fp32), pp2, bucket) == 0);
  CHECK(pipeline_reduce_bucket_bytes(t, pp2, {}) == 0);
}

TEST_CASE("gradients kept until the next backward are there at the end of every forward",
          "[memory]") {
  // DeepSpeed's BF16_Optimizer: the bf16 gradients stay after update_hp_grads until the next
  // backward clears them, and its step does not free them, so every forward runs beside them,
  // the next step's warm-up too.
  const Model m = test::preset_model("llama3-8b");
  Training t = mixed_precision_adam();
  t.grad_dtype = Dtype::fp32;
  t.seq_len = 8192;  // long sequences: a backward frees more than the gradients
  const Device d = test::preset_cluster("dgx-h100", 1).device;
  const ExecutionOptions held{.param_grads_held = true};
  const ExecutionOptions kept{.param_grads_held = true, .param_grads_kept = true};
  for (const Recompute recompute : {Recompute::none, Recompute::full}) {
    INFO("recompute " << static_cast<int>(recompute));
    Layout pp2 = test::layout(2, 8, 1, 2);
    pp2.recompute = recompute;
    const StageLayers first = stage_layers(m, pp2, 0);
    const RankMemory r = rank_memory(m, t, pp2, first, d, kept);
    CHECK(rank_memory(m, t, pp2, first, d, held).param_grads_bytes < r.param_grads_bytes);
    // At a forward's end neither the backward's buffers nor the layer it recomputes exist.
    CHECK(r.param_grads_bytes ==
          r.state.parameters - r.backward_buffers_bytes - r.recompute_working_bytes);
    CHECK(r.param_grads_bytes > r.state.parameters / 2);
    CHECK(r.peak_bytes() - rank_memory(m, t, pp2, first, d, {}).peak_bytes() ==
          r.param_grads_bytes);
  }
  // GPipe too: the last step's gradients are there through this step's forwards.
  Layout gpipe = test::layout(2, 8, 1, 2);
  gpipe.schedule = Schedule::gpipe;
  CHECK(rank_memory(m, t, gpipe, stage_layers(m, gpipe, 0), d, kept).param_grads_bytes > 0);
  // BF16_Optimizer runs at ZeRO-0/1 only; ZeRO-2 reduces each gradient as it is made.
  const Layout zero2 = test::layout(2, 8, 1, 1, 1, 2);
  const StageLayers whole = stage_layers(m, zero2, 0);
  CHECK(rank_memory(m, t, zero2, whole, d, kept).param_grads_bytes ==
        rank_memory(m, t, zero2, whole, d, held).param_grads_bytes);
  // fp16 compute with 16-bit gradients of another name holds nothing twice.
  Training fp16 = t;
  fp16.dtype = Dtype::fp16;
  fp16.grad_dtype = Dtype::bf16;
  const Layout pp2 = test::layout(2, 8, 1, 2);
  CHECK(rank_memory(m, fp16, pp2, stage_layers(m, pp2, 0), d, kept).param_grads_bytes == 0);
}
