#include "executor/layers/layer_context.h"

#include <fmt/format.h>

#include "core/error.h"

namespace shardplan {

LayerDims layer_dims(const Model& m, const RankShard& shard, int64_t batch, int64_t seq_len,
                     bool sequence_parallel, int cp, int cp_rank) {
  if (cp > 1 && seq_len % (2 * cp) != 0)
    throw InputError("layout", "cp",
                     fmt::format("2 × cp = {} does not divide seq_len={}", 2 * cp, seq_len),
                     "load-balanced causal context parallelism splits the sequence into 2·cp "
                     "chunks");
  LayerDims d;
  d.batch = batch;
  d.seq = seq_len / cp;
  d.cp = cp;
  d.cp_rank = cp_rank;
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
  if (seq_len > m.max_seq)
    throw InputError("training", "seq_len",
                     fmt::format("{} exceeds max_position_embeddings={}", seq_len, m.max_seq));
  return d;
}

}  // namespace shardplan
