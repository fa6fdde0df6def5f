// The executor's memory as its allocator measures it: parameters, gradients and Adam state are
// exactly the model's parameter count (core/model.h's count_parameters) times 4, 4 and 8 bytes; a
// layer keeps exactly block_saved_bytes() of activations under each recompute mode, tp, sequence
// and context parallelism — the cost model's figure (simulator/activation_memory.h) for attention
// that keeps its probabilities and no dropout — and frees every workspace buffer before it returns.
#include <catch2/catch.hpp>
#include <vector>

#include "core/presets.h"
#include "executor/layers/block.h"
#include "executor/state/adam.h"
#include "simulator/activation_memory.h"
#include "test_models.h"
#include "thread_tp_comm.h"

using namespace shardplan;

TEST_CASE("memory: parameters, gradients and optimizer bytes are exact", "[executor]") {
  for (const Model& m : {load_model("gpt-tiny"), load_model("gpt-small"), test::llama_like()}) {
    INFO(m.name);
    const ParamLayout layout = param_layout(m, whole_model(m));
    const ParamCounts counts = count_parameters(m);
    CHECK(layout.total == counts.total());
    CHECK(layout.count(ParamComponent::embedding) == counts.embedding);
    CHECK(layout.count(ParamComponent::position_embedding) == counts.position_embedding);
    CHECK(layout.count(ParamComponent::attention) == counts.attention);
    CHECK(layout.count(ParamComponent::mlp) == counts.mlp);
    CHECK(layout.count(ParamComponent::norms) == counts.norms);
    CHECK(layout.count(ParamComponent::head) == counts.head);
    CHECK(layout.layer_range(0).count() ==
          attention_params_per_layer(m) + mlp_params_per_layer(m) + norm_params_per_layer(m));

    TensorAllocator alloc;
    Buffer<float> params =
        alloc.allocate<float>(MemoryCategory::parameters, layout.total, "parameters");
    Buffer<float> grads =
        alloc.allocate<float>(MemoryCategory::gradients, layout.total, "gradients");
    AdamState adam = adam_state(alloc, layout.total, /*master_weights=*/false);
    CHECK(alloc.current()[MemoryCategory::parameters] == 4 * counts.total());
    CHECK(alloc.current()[MemoryCategory::gradients] == 4 * counts.total());
    CHECK(alloc.current()[MemoryCategory::optimizer] == 8 * counts.total());
  }
}

TEST_CASE("memory: a layer keeps block_saved_bytes of activations and no buffers", "[executor]") {
  const Model m = load_model("gpt-tiny");
  for (int cp : {1, 2})
    for (int tp : {1, 2})
      for (bool sp : {false, true})
        for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
          if (tp == 1 && sp) continue;
          INFO("cp=" << cp << " tp=" << tp << " sp=" << sp
                     << " recompute=" << enum_name(mode, kRecomputeNames));
          const auto ranks = static_cast<size_t>(tp * cp);
          std::vector<int64_t> saved_bytes(ranks), expected(ranks), activations(ranks),
              buffers(ranks), after_backward(ranks);
          test::run_tp_cp_grid<float>(tp, cp, [&](TpComm<float>& tp_comm, TpComm<float>& cp_comm) {
            const auto r = static_cast<size_t>(cp_comm.rank() * tp + tp_comm.rank());
            TensorAllocator alloc;
            LayerContext<float> c{alloc, tp_comm, nullptr, &cp_comm};
            const RankShard shard{tp, tp_comm.rank(), {0}, false, false};
            const ParamLayout layout = param_layout(m, shard);
            std::vector<float> params(static_cast<size_t>(layout.total), 0.01f),
                grads(params.size());
            const LayerDims d = layer_dims(m, shard, 2, 32, sp, cp, cp_comm.rank());
            const auto w = block_tensors<const float>(layout, 0, params.data());
            Buffer<float> x = alloc.allocate<float>(MemoryCategory::activations,
                                                    d.local_tokens() * d.hidden, "x");
            BlockSaved<float> saved;
            Buffer<float> y = block_forward(d, w, std::move(x), mode, saved, c);
            saved_bytes[r] = saved.bytes();
            expected[r] = block_saved_bytes(d, mode, 4);
            activations[r] = alloc.current()[MemoryCategory::activations] - y.bytes();
            buffers[r] = alloc.current()[MemoryCategory::buffers];
            Buffer<float> dx = block_backward(d, w, block_tensors(layout, 0, grads.data()),
                                              std::move(saved), y.data(), c);
            after_backward[r] = alloc.current().total() - y.bytes() - dx.bytes();
          });
          for (size_t r = 0; r < ranks; ++r) {
            CHECK(saved_bytes[r] == expected[r]);
            CHECK(activations[r] == expected[r]);
            CHECK(buffers[r] == 0);
            CHECK(after_backward[r] == 0);
          }
        }
}

TEST_CASE("memory: saved bytes by hand for gpt-tiny", "[executor]") {
  // gpt-tiny: hidden 64, 4 heads of 16, ffn 256; micro-batch 2 × 32 tokens, fp32.
  // none: 4·64·64 (x, h1, x1, h2) + 4·64 (norm statistics) + 64·(192 + 64 + 256 + 256) (qkv, ctx,
  // u, a)
  //       + 2·4·32·32 (probs) elements.
  const Model m = load_model("gpt-tiny");
  const LayerDims d = layer_dims(m, whole_model(m), 2, 32, false);
  const int64_t stream = 4 * 64 * 64, parallel = 64 * (192 + 64 + 256 + 256),
                probs = 2 * 4 * 32 * 32;
  CHECK(block_saved_bytes(d, Recompute::none, 4) == 4 * (stream + parallel + probs));
  CHECK(block_saved_bytes(d, Recompute::selective, 4) == 4 * (stream + parallel));
  CHECK(block_saved_bytes(d, Recompute::full, 4) == 4 * 64 * 64);
}

TEST_CASE("memory: a layer's saved bytes are the cost model's activation bytes", "[executor]") {
  // The executor materialises the attention probabilities and has no dropout.
  const ExecutionOptions executor_options{.attention = AttentionKernel::unfused, .dropout = false};
  for (const Model& m : {load_model("gpt-tiny"), load_model("gpt-small"), test::llama_like()})
    for (int cp : {1, 2, 4})
      for (int tp : {1, 2, 4})
        for (bool sp : {false, true})
          for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
            if (m.num_kv_heads % tp != 0) continue;
            INFO(m.name << " cp=" << cp << " tp=" << tp << " sp=" << sp << " "
                        << enum_name(mode, kRecomputeNames));
            RankShard shard = whole_model(m);
            shard.tp = tp;
            const LayerDims d = layer_dims(m, shard, 2, m.max_seq, sp, cp, cp - 1);
            const RankShape r{m.max_seq / cp, m.max_seq, 2, tp, sp && tp > 1};
            CHECK(block_saved_bytes(d, mode, 4) == layer_activation_bytes(m, Dtype::fp32, r, false,
                                                                          mode, executor_options,
                                                                          Fp8Recipe::none));
          }
}
