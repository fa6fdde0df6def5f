// Parameter shards of a rank, a layer and the model's ends.
#include "core/param_shard.h"

#include <cassert>

#include "core/schedule.h"

namespace shardplan {

namespace {

ParamShard operator*(int64_t n, const ParamShard& p) {
  return {n * p.embedding, n * p.head,  n * p.attention, n * p.mlp,
          n * p.router,    n * p.norms, n * p.experts};
}

ParamShard operator+(const ParamShard& a, const ParamShard& b) {
  return {a.embedding + b.embedding, a.head + b.head,   a.attention + b.attention, a.mlp + b.mlp,
          a.router + b.router,       a.norms + b.norms, a.experts + b.experts};
}

// A chunk's layers into its stage's counts: a dense model's counted, not walked (the planner asks
// this of every stage of every layout).
void add_chunk(StageLayers& s, const Model& m, LayerRange layers) {
  if (!m.is_moe()) {
    s.dense_layers += layers.end - layers.begin;
    return;
  }
  for (int layer = layers.begin; layer < layers.end; ++layer)
    ++(m.is_moe_layer(layer) ? s.moe_layers : s.dense_layers);
}

StageLayers no_layers(const Layout& l, int stage) {
  return {.stage = stage, .first = stage == 0, .last = stage == last_stage_rank(l)};
}

}  // namespace

StageLayers stage_layers(const Model& m, const Layout& l, int stage) {
  assert(stage >= 0 && stage < l.pp);
  StageLayers s = no_layers(l, stage);
  for (int chunk = 0; chunk < l.vpp; ++chunk)
    add_chunk(s, m, virtual_stage_layers(m, l, virtual_stage(l, stage, chunk)));
  return s;
}

std::vector<StageLayers> every_stage_layers(const Model& m, const Layout& l) {
  std::vector<StageLayers> out;
  out.reserve(static_cast<size_t>(l.pp));
  for (int stage = 0; stage < l.pp; ++stage) out.push_back(no_layers(l, stage));
  const int chunks = l.pp * l.vpp;
  for (int vs = 0, begin = 0; vs < chunks; ++vs) {
    const LayerRange layers = l.stages.empty()
                                  ? virtual_stage_layers(m, l, vs)
                                  : LayerRange{begin, begin + l.stages[static_cast<size_t>(vs)]};
    add_chunk(out[static_cast<size_t>(stage_slot(l, vs).pp_rank)], m, layers);
    begin = layers.end;
  }
  return out;
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

int64_t word_embedding_shard(const Model& m, int tp) {
  return shard_size(m.vocab, tp) * m.hidden;
}

ParamShard layer_param_shard(const Model& m, const Layout& l, bool moe_layer) {
  ParamShard p;
  p.attention = attention_params_shard(m, l.tp);
  p.norms = norm_params_per_layer(m);  // replicated
  p.sequence_sharded = m.out_bias ? m.hidden : 0;
  if (!moe_layer) {
    p.mlp = mlp_params_shard(m, m.ffn_hidden, l.tp);
    p.sequence_sharded += m.mlp_bias ? m.hidden : 0;
    return p;
  }
  // The router is one h×E gate per MoE layer, replicated. Experts are split by tp too: Megatron-
  // Core's expert_tensor_parallel_size defaults to tp.
  assert(m.moe.num_experts % l.ep == 0);
  p.router = m.hidden * m.moe.num_experts;
  p.experts = (m.moe.num_experts / l.ep) * mlp_params_shard(m, m.moe.expert_ffn_hidden, l.tp);
  return p;
}

ParamShard first_stage_params(const Model& m, const Layout& l) {
  ParamShard p;
  p.embedding = word_embedding_shard(m, l.tp);  // VocabParallelEmbedding
  if (m.position_embedding == PositionEmbedding::learned) {
    p.embedding += m.max_seq * m.hidden;
    p.sequence_sharded = m.max_seq * m.hidden;
  }
  return p;
}

ParamShard last_stage_params(const Model& m, const Layout& l) {
  ParamShard p;
  p.norms = norm_params(m);  // the final norm, replicated
  // An untied head lives on the last stage; a tied one too when the first stage is on another
  // rank, as a copy whose gradient is all-reduced with the first stage's embedding (Megatron-LM's
  // embedding group). Under v_placement both are on rank 0, which shares the one embedding.
  if (!m.tied_embeddings || last_stage_rank(l) != 0) p.head = word_embedding_shard(m, l.tp);
  return p;
}

ParamShard param_shard(const Model& m, const Layout& l, const StageLayers& s) {
  ParamShard p = s.dense_layers * layer_param_shard(m, l, false);
  if (s.moe_layers > 0) p = p + s.moe_layers * layer_param_shard(m, l, true);
  if (s.first) p = p + first_stage_params(m, l);
  if (s.last) p = p + last_stage_params(m, l);
  return p;
}

}  // namespace shardplan
