#include "executor/layer_context.h"

#include <fmt/format.h>

#include "core/error.h"

namespace shardplan {

LayerDims layer_dims(const Model& m, const RankShard& shard, int64_t batch, int64_t seq,
                     bool sequence_parallel) {
  LayerDims d;
  d.batch = batch;
  d.seq = seq;
  d.hidden = m.hidden;
  d.heads = m.num_heads / shard.tp;
  d.kv_heads = m.num_kv_heads / shard.tp;
  d.head_dim = m.head_dim;
  d.ffn = split_range(m.ffn_hidden, shard.tp, shard.tp_rank).count();
  d.activation = m.activation;
  d.norm = m.norm;
  d.tp = shard.tp;
  d.sequence_parallel = sequence_parallel && shard.tp > 1;
  if (d.sequence_parallel && d.tokens() % shard.tp != 0)
    throw InputError(
        "layout", "sequence_parallel",
        fmt::format("tp={} does not divide the micro-batch's {} tokens", shard.tp, d.tokens()));
  if (seq > m.max_seq)
    throw InputError("training", "seq_len",
                     fmt::format("{} exceeds max_position_embeddings={}", seq, m.max_seq));
  return d;
}

}  // namespace shardplan
