// The token shapes one rank works on per micro-batch, after context parallelism (sequence split
// over cp), sequence parallelism (layer-norm and dropout regions split over tp) and the
// micro-batch.
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/param_shard.h"
#include "core/training.h"

namespace shardplan {

struct RankShape {
  int64_t seq = 0;     // s/cp: query positions per sequence on this rank
  int64_t kv_seq = 0;  // s: key positions each query meets (the full sequence, over the cp ring)
  int64_t batch = 0;   // micro_batch
  int tp = 1;
  bool sequence_parallel = false;

  int64_t tokens() const { return seq * batch; }
  // Tokens in the norm/dropout/residual regions: split over tp under sequence parallelism
  // (Korthikanti et al. 2022 §4.2.2), replicated otherwise.
  int64_t region_tokens() const { return (sequence_parallel ? shard_size(seq, tp) : seq) * batch; }
};

inline RankShape rank_shape(const Training& t, const Layout& l) {
  return RankShape{t.seq_len / l.cp, t.seq_len, l.micro_batch, l.tp,
                   l.sequence_parallel && l.tp > 1};
}

}  // namespace shardplan
