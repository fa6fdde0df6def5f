#include "core/zero_units.h"

#include "core/param_shard.h"
#include "core/schedule.h"

namespace shardplan {

std::vector<UnitSpan> gradient_buckets(std::span<const int64_t> params, int64_t threshold) {
  std::vector<UnitSpan> out;
  UnitSpan b{0, -1, 0};
  for (int u = static_cast<int>(params.size()) - 1; u >= 0; --u) {
    if (params[static_cast<size_t>(u)] == 0) continue;
    if (b.last < 0) b.last = u;
    b.first = u;
    b.params += params[static_cast<size_t>(u)];
    if (b.params >= threshold) {
      out.push_back(b);
      b = UnitSpan{0, -1, 0};
    }
  }
  if (b.last >= 0) out.push_back(b);
  return out;
}

std::vector<int64_t> zero_unit_params(const Model& m, const Training& t, const Layout& l,
                                      int stage) {
  const bool fsdp = l.zero >= 3;
  // core/schedule_layer.cpp's build_chunk: the head borrows the word embedding it is tied to.
  const bool head_borrows = fsdp && m.tied_embeddings && last_stage_rank(l) == 0;
  std::vector<int64_t> out;
  for (int chunk = 0; chunk < l.vpp; ++chunk) {
    const int vs = virtual_stage(l, stage, chunk);
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    std::vector<int64_t> units;  // the chunk's, as build_chunk makes them
    units.reserve(static_cast<size_t>(layers.end - layers.begin + 2));
    if (vs == 0) units.push_back(first_stage_params(m, l).dense());
    const int64_t dense = layer_param_shard(m, l, false).dense();
    const int64_t moe = m.is_moe() ? layer_param_shard(m, l, true).dense() : 0;
    for (int layer = layers.begin; layer < layers.end; ++layer)
      units.push_back(m.is_moe_layer(layer) ? moe : dense);
    if (vs == l.pp * l.vpp - 1) units.push_back(last_stage_params(m, l).dense());
    for (const UnitSpan& b : gradient_buckets(units, bucket_threshold(t, l))) {
      if (head_borrows && vs == 0 && b.first == 0) {
        const int64_t word = word_embedding_shard(m, l.tp);
        out.push_back(word);
        if (b.params > word) out.push_back(b.params - word);
        continue;
      }
      out.push_back(b.params);
    }
  }
  return out;
}

int64_t zero_shard_params(std::span<const int64_t> units, int64_t members) {
  int64_t shard = 0;
  for (const int64_t n : units) shard += shard_size(n, members);
  return shard;
}

}  // namespace shardplan
