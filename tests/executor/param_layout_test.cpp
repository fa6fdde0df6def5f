// The flat parameter layout: element counts by component worked out by hand for the test models,
// whole and tensor-parallel; adjacency of the tensors fused into one GEMM; shard-to-full indexing;
// the tied LM-head copy on a last pipeline stage; the models the executor refuses.
#include "executor/state/param_layout.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "test_models.h"

using namespace shardplan;

TEST_CASE("param layout: gpt2-like counts by hand, tp = 1 and tp = 2", "[executor]") {
  const Model m =
      test::gpt2_like();  // 2 layers, hidden 32, 4 heads, ffn 64, vocab 256, 16 positions
  const ParamLayout whole = param_layout(m, whole_model(m));
  // wte 256·32, wpe 16·32; per layer attention 4·32·32 + 3·32 + 32, mlp 2·64·32 + 64 + 32,
  // norms 4·32; final norm 2·32.
  CHECK(whole.count(ParamComponent::embedding) == 8192);
  CHECK(whole.count(ParamComponent::position_embedding) == 512);
  CHECK(whole.count(ParamComponent::attention) == 2 * 4224);
  CHECK(whole.count(ParamComponent::mlp) == 2 * 4192);
  CHECK(whole.count(ParamComponent::norms) == 2 * 128 + 64);
  CHECK(whole.count(ParamComponent::head) == 0);  // tied
  CHECK(whole.total == 25856);

  RankShard tp2 = whole_model(m);
  tp2.tp = 2;
  tp2.tp_rank = 1;
  const ParamLayout half = param_layout(m, tp2);
  // Column-parallel q/k/v (and biases), fc1 and the vocabulary halve; wo and fc2 halve by columns;
  // bo, b_fc2, norms and wpe stay whole.
  CHECK(half.count(ParamComponent::embedding) == 4096);
  CHECK(half.count(ParamComponent::position_embedding) == 512);
  CHECK(half.count(ParamComponent::attention) == 2 * (3 * 512 + 48 + 512 + 32));
  CHECK(half.count(ParamComponent::mlp) == 2 * (1024 + 32 + 1024 + 32));
  CHECK(half.total == 13408);
  const ParamTensor& wo = half.get("layers.0.attn.wo");
  CHECK(wo.col_begin == 16);
  CHECK(wo.local_cols == 16);
  CHECK(full_index(wo, 0) == 16);
  CHECK(full_index(wo, 16) == 32 + 16);
  const ParamTensor& wte = half.get("wte");
  CHECK(wte.row_begin == 128);
  CHECK(full_index(wte, 5) == 128 * 32 + 5);
}

TEST_CASE("param layout: llama-like counts, fused tensors adjacent, layers contiguous",
          "[executor]") {
  const Model m =
      test::llama_like();  // hidden 32, 4 heads of 8, 2 kv heads, ffn 48, swiglu, no biases
  const ParamLayout l = param_layout(m, whole_model(m));
  CHECK(l.count(ParamComponent::attention) == 2 * (1024 + 512 + 512 + 1024));
  CHECK(l.count(ParamComponent::mlp) == 2 * 3 * 1536);
  CHECK(l.count(ParamComponent::norms) == 2 * 64 + 32);
  CHECK(l.count(ParamComponent::head) == 8192);
  CHECK(l.total == 32416);
  const auto follows = [&](const char* a, const char* b) {
    return l.get(a).offset + l.get(a).count() == l.get(b).offset;
  };
  CHECK(follows("layers.1.attn.wq", "layers.1.attn.wk"));
  CHECK(follows("layers.1.attn.wk", "layers.1.attn.wv"));
  CHECK(follows("layers.1.mlp.w_gate", "layers.1.mlp.w_fc1"));
  const ElementRange r0 = l.layer_range(0), r1 = l.layer_range(1);
  CHECK(r0.begin == 8192 + 512);
  CHECK(r0.end == r1.begin);
  CHECK(r1.count() == 3072 + 4608 + 64);
}

TEST_CASE("param layout: split_range balances and covers", "[executor]") {
  CHECK(split_range(10, 3, 0).begin == 0);
  CHECK(split_range(10, 3, 0).end == 4);
  CHECK(split_range(10, 3, 1).end == 7);
  CHECK(split_range(10, 3, 2).end == 10);
  CHECK(split_range(256, 4, 3).count() == 64);
}

TEST_CASE("param layout: a last stage holds a copy of the tied embedding", "[executor]") {
  const Model m = test::gpt2_like();
  RankShard last;
  last.layers = {1};
  last.embedding = false;
  const ParamLayout l = param_layout(m, last);
  const ParamTensor& head = l.get("lm_head");
  CHECK(head.init_name == "wte");
  CHECK(head.component == ParamComponent::head);
  CHECK(head.count() == 256 * 32);
  CHECK_FALSE(l.has("wte"));
  CHECK(l.total == 4224 + 4192 + 128 + 64 + 8192);
}

TEST_CASE("param layout: models the executor does not run are input errors", "[executor]") {
  Model moe = test::gpt2_like();
  moe.moe.num_experts = 4;
  moe.moe.top_k = 2;
  CHECK_THROWS_AS(param_layout(moe, whole_model(moe)), InputError);
  Model rope = test::gpt2_like();
  rope.position_embedding = PositionEmbedding::rope;
  CHECK_THROWS_AS(param_layout(rope, whole_model(rope)), InputError);
  const Model m = test::gpt2_like();
  RankShard tp3 = whole_model(m);
  tp3.tp = 3;
  CHECK_THROWS_WITH(param_layout(m, tp3),
                    "model: num_attention_heads: tp=3 does not divide num_attention_heads=4 and "
                    "num_key_value_heads=4");
}
