#include "simulator/param_shard.h"

#include <cassert>

namespace shardplan {

StageLayers stage_layers(const Model& m, const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  const int chunks = l.pp * l.vpp;
  assert(m.num_layers % chunks == 0);
  const int per_chunk = m.num_layers / chunks;
  StageLayers s;
  s.stage = stage;
  s.first = stage == 0;
  s.last = stage == l.pp - 1;
  if (!m.is_moe()) {
    s.dense_layers = m.num_layers / l.pp;
    return s;
  }
  for (int layer = 0; layer < m.num_layers; ++layer) {
    if ((layer / per_chunk) % l.pp != stage) continue;
    if (m.is_moe_layer(layer))
      ++s.moe_layers;
    else
      ++s.dense_layers;
  }
  return s;
}

int64_t attention_params_shard(const Model& m, int tp) {
  const int64_t q = int64_t{m.num_heads} * m.head_dim;
  const int64_t kv = int64_t{m.num_kv_heads} * m.head_dim;
  const int64_t qkv_cols = shard_size(q + 2 * kv, tp);  // column-parallel q, k, v
  const int64_t o_rows = shard_size(q, tp);             // row-parallel output projection
  return m.hidden * qkv_cols + (m.qkv_bias ? qkv_cols : 0) + o_rows * m.hidden +
         (m.out_bias ? m.hidden : 0);
}

int64_t mlp_params_shard(const Model& m, int64_t ffn_hidden, int tp) {
  const int64_t up_cols = (m.activation == Activation::swiglu ? 2 : 1) * shard_size(ffn_hidden, tp);
  const int64_t down_rows = shard_size(ffn_hidden, tp);
  return m.hidden * up_cols + (m.mlp_bias ? up_cols : 0) + down_rows * m.hidden +
         (m.mlp_bias ? m.hidden : 0);
}

ParamShard param_shard(const Model& m, const Layout& l, const StageLayers& s) {
  ParamShard p;
  const int64_t vocab_rows = shard_size(m.vocab, l.tp);  // VocabParallelEmbedding
  if (s.first) {
    p.embedding = vocab_rows * m.hidden;
    if (m.position_embedding == PositionEmbedding::learned) p.embedding += m.max_seq * m.hidden;
  }
  // An untied head lives on the last stage; a tied one too when pp > 1, as a copy whose gradient
  // is all-reduced with the first stage's embedding (Megatron-LM's embedding group).
  if (s.last && (!m.tied_embeddings || l.pp > 1)) p.head = vocab_rows * m.hidden;
  const int layers = s.layers();
  p.attention = layers * attention_params_shard(m, l.tp);
  p.mlp = s.dense_layers * mlp_params_shard(m, m.ffn_hidden, l.tp);
  p.norms = layers * norm_params_per_layer(m) + (s.last ? norm_params(m) : 0);  // norms replicated
  // Experts are split by tp too: Megatron-Core's expert_tensor_parallel_size defaults to tp.
  if (s.moe_layers > 0) {
    assert(m.moe.num_experts % l.ep == 0);
    p.router = s.moe_layers * m.hidden * m.moe.num_experts;
    p.experts = int64_t{s.moe_layers} * (m.moe.num_experts / l.ep) *
                mlp_params_shard(m, m.moe.expert_ffn_hidden, l.tp);
  }
  return p;
}

}  // namespace shardplan
