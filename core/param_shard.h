// Which parameters one rank holds: the model cut by tensor parallelism (Megatron-LM's column- and
// row-parallel linears, vocab-parallel embedding and head), by pipeline stage (embedding on the
// first stage, final norm and head on the last) and by expert parallelism. Counts are exact
// integers; ZeRO's division over the data-parallel group is applied by the memory model and the
// schedule's optimizer step.
#pragma once

#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/model.h"

namespace shardplan {

// The layers one pipeline rank holds (all of its virtual-pipeline chunks together).
struct StageLayers {
  int stage = 0;
  int dense_layers = 0;  // layers with a dense MLP
  int moe_layers = 0;    // layers with an expert MLP
  bool first = false;    // holds the embedding
  bool last = false;     // holds the final norm and the LM head

  int layers() const { return dense_layers + moe_layers; }
};

// Model chunk c holds the layers core/stage_split.h gives it (L/(pp·vpp) each when even) and runs
// on pipeline rank c mod pp (Megatron-LM's interleaved assignment, Narayanan et al. 2021 §2.2.2;
// vpp = 1 gives contiguous blocks).
StageLayers stage_layers(const Model& m, const Layout& l, int stage);
// Every stage's, in one walk over the split (stage_layers walks it up to each of its chunks).
std::vector<StageLayers> every_stage_layers(const Model& m, const Layout& l);

// Parameters on one rank (tensor-parallel rank 0, which holds the largest shard when a dimension
// does not divide evenly), not yet divided by ZeRO: of a stage, of one layer, or of the model's
// ends.
struct ParamShard {
  int64_t embedding = 0;  // word embedding (vocab-parallel) and learned positions (replicated)
  int64_t head = 0;       // LM head; with tied embeddings and pp > 1 the last stage's copy
  int64_t attention = 0;
  int64_t mlp = 0;      // dense MLPs
  int64_t router = 0;   // MoE gates (replicated)
  int64_t norms = 0;    // per-layer norms and, on the last stage, the final norm (replicated)
  int64_t experts = 0;  // the num_experts/ep experts this rank holds in each of its MoE layers
  // Of `attention`, `mlp` and `embedding`: what every tp rank holds whole and applies to its
  // sequence shard under sequence parallelism — the row-parallel projections' biases (added after
  // the reduce-scatter, Megatron-LM's RowParallelLinear) and the learned positions.
  int64_t sequence_sharded = 0;

  // Dense parameters are replicated over dp (and cp); expert parameters over dp/ep only.
  int64_t dense() const { return embedding + head + attention + mlp + router + norms; }
  int64_t total() const { return dense() + experts; }
  // Replicated over tp: their gradients are all-reduced over tp under sequence parallelism
  // (Megatron-LM's finalize_model_grads: the parameters marked sequence_parallel), as the executor
  // reduces them.
  int64_t tp_replicated() const { return router + norms + sequence_sharded; }
};

ParamShard param_shard(const Model& m, const Layout& l, const StageLayers& s);

// One transformer layer (dense or MoE): attention, its two norms, and the MLP or the router and
// this rank's experts.
ParamShard layer_param_shard(const Model& m, const Layout& l, bool moe_layer);

// The model's ends: the first stage's embedding (`embedding`), the last stage's final norm
// (`norms`) and head (`head`).
ParamShard first_stage_params(const Model& m, const Layout& l);
ParamShard last_stage_params(const Model& m, const Layout& l);

// Per-layer shards on one tensor-parallel rank. Column-parallel: q, k, v and the MLP's up (and
// gate) projections, weights and biases split by tp. Row-parallel: the attention output and MLP
// down projections, weights split by tp, biases replicated (Shoeybi et al. 2019 §3, Megatron-LM
// RowParallelLinear adds its bias after the all-reduce).
int64_t attention_params_shard(const Model& m, int tp);
int64_t mlp_params_shard(const Model& m, int64_t ffn_hidden, int tp);  // one MLP of that width

// The vocab-parallel word embedding's shard (VocabParallelEmbedding: ceil(V/tp) rows of h).
int64_t word_embedding_shard(const Model& m, int tp);

// ceil(n / parts): the size of the first (largest) shard of n elements cut into `parts`.
constexpr int64_t shard_size(int64_t n, int64_t parts) {
  return (n + parts - 1) / parts;
}

}  // namespace shardplan
