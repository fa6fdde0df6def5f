// The layers run the same whatever a backend's attention batching (Kernels::
// attention_heads_per_call): a whole model's forward and backward with one head a call (the CPU
// backend's) and with every kv group in one batched call (a GPU's) give the same loss and
// gradients, bit for bit: the batched calls are the same GEMMs and softmax rows, and a group's key
// and value gradients still accumulate over its heads in head order.
#include <catch2/catch.hpp>
#include <vector>

#include "all_heads_cpu_kernels.h"
#include "executor/state/param_init.h"
#include "test_models.h"
#include "tests/executor/chunk.h"

namespace shardplan {
namespace {

struct ModelRun {
  double loss = 0;
  std::vector<float> grads;
};

ModelRun run_model(const Model& m, Kernels<float>& kernels) {
  TensorAllocator alloc;
  alloc.set_poison_for_overwrite(true);
  SingleRankTpComm<float> tp;
  LayerContext<float> c{alloc, tp, nullptr, nullptr, &kernels};
  const RankShard shard = whole_model(m);
  const ParamLayout layout = param_layout(m, shard);
  std::vector<float> params(static_cast<size_t>(layout.total));
  init_parameters<float>(m, layout, 7, params);
  const LayerDims d = layer_dims(m, shard, 2, 8, false);
  std::vector<int32_t> inputs(static_cast<size_t>(d.tokens())), targets(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = static_cast<int32_t>((37 * i + 11) % 256);
    targets[i] = static_cast<int32_t>((53 * i + 3) % 256);
  }
  const MicroBatchTokens tokens{inputs.data(), targets.data()};
  ModelRun r;
  r.grads.assign(params.size(), 0.0f);
  ChunkSaved<float> saved;
  const ModelChunk chunk = whole_model_chunk(m);
  r.loss =
      chunk_forward(chunk, layout, params.data(), d, tokens, {}, Recompute::selective, saved, c)
          .loss_sum;
  chunk_backward<float>(chunk, layout, params.data(), r.grads.data(), d, tokens, std::move(saved),
                        nullptr, 1.0f / static_cast<float>(d.tokens()), c);
  return r;
}

TEST_CASE("attention batching: one head a call and all kv groups a call agree exactly",
          "[executor]") {
  for (const Model& m : {test::gpt2_like(), test::llama_like(2, 32, 8, 2, 48, 16)}) {
    INFO(m.name);
    CpuKernels<float> one_head;
    test::AllHeadsCpuKernels<float> all_heads;
    const ModelRun a = run_model(m, one_head), b = run_model(m, all_heads);
    CHECK(a.loss == b.loss);
    CHECK(a.grads == b.grads);
  }
}

}  // namespace
}  // namespace shardplan
