// Folding a rank's program: the chunks' units made once per kind, their steps counted by how many
// layers of that kind the chunk holds, and the data-parallel actions made by the same functions
// build_program emits them with (schedule_data_parallel.cpp), over units that carry no steps.
#include "core/schedule_fold.h"

#include <algorithm>
#include <utility>

#include "core/schedule_detail.h"

namespace shardplan {
namespace sd = schedule_detail;
namespace {

// Folded actions, each entry found by a hash of what same_priced_action compares: a stage's
// passes add a few hundred actions into some dozens of entries.
class Folder {
 public:
  Folder() {
    out_.reserve(64);
    slots_.assign(128, kEmpty);
  }
  void add(const Action& a, int64_t per_microbatch, int64_t per_step) {
    if (per_microbatch == 0 && per_step == 0) return;
    const bool per_microbatch_entry = per_microbatch > 0;
    size_t slot = hash(a, per_microbatch_entry) & (slots_.size() - 1);
    for (; slots_[slot] != kEmpty; slot = (slot + 1) & (slots_.size() - 1)) {
      FoldedAction& f = out_[slots_[slot]];
      if ((f.per_microbatch > 0) == per_microbatch_entry && same_priced_action(f.action, a)) {
        f.per_microbatch += per_microbatch;
        f.per_step += per_step;
        return;
      }
    }
    Action kept = a;
    kept.deps_begin = kept.deps_count = 0;
    kept.flags &= kInputGradOnly;  // what the pricer reads; not where activations live
    slots_[slot] = static_cast<uint32_t>(out_.size());
    out_.push_back({kept, per_microbatch, per_step});
    if (2 * out_.size() > slots_.size()) rehash();
  }
  void add_steps(const std::vector<Action>& steps, int64_t times) {
    if (times > 0)
      for (const Action& a : steps) add(a, times, 0);
  }
  std::vector<FoldedAction> take() { return std::move(out_); }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};

  // An entry's slot: its action's priced_action_hash, and whether it counts per micro-batch.
  static size_t hash(const Action& a, bool per_microbatch_entry) {
    return static_cast<size_t>(priced_action_hash(a) ^ uint64_t{per_microbatch_entry});
  }

  void rehash() {
    slots_.assign(2 * slots_.size(), kEmpty);
    for (uint32_t i = 0; i < out_.size(); ++i) {
      size_t slot = hash(out_[i].action, out_[i].per_microbatch > 0) & (slots_.size() - 1);
      while (slots_[slot] != kEmpty) slot = (slot + 1) & (slots_.size() - 1);
      slots_[slot] = i;
    }
  }

  std::vector<FoldedAction> out_;
  std::vector<uint32_t> slots_;  // open addressing: indices into out_
};

// A unit as build_chunk makes it, without its steps: what the data-parallel plan reads.
sd::Unit bare(const sd::Unit& kind, int layer_begin, int layer_end) {
  sd::Unit u;
  u.layer_begin = layer_begin;
  u.layer_end = layer_end;
  u.parts = kind.parts;
  u.params = kind.params;
  u.borrowed_params = kind.borrowed_params;
  return u;
}

// What makes two chunks of a rank fold alike: whether they hold an end of the model, and their
// layers' count and MoE pattern (a layer is an MoE layer by its index modulo layer_freq).
struct ChunkShape {
  bool first = false, last = false;
  int layers = 0, moe_phase = 0;
  bool operator==(const ChunkShape&) const = default;
};

ChunkShape chunk_shape(const Model& m, const Layout& l, int vs) {
  const LayerRange layers = virtual_stage_layers(m, l, vs);
  return {vs == 0, vs == l.pp * l.vpp - 1, layers.end - layers.begin,
          m.is_moe() ? layers.begin % m.moe.layer_freq : 0};
}

// A rank's chunks by shape: one chunk of each (its index) with how many chunks have it. The
// middle chunks of an interleaved rank are all alike.
std::vector<std::pair<int, int64_t>> chunk_shapes(const Model& m, const Layout& l, int pp_rank) {
  std::vector<std::pair<int, int64_t>> shapes;
  std::vector<ChunkShape> seen;
  for (int c = 0; c < l.vpp; ++c) {
    const ChunkShape shape = chunk_shape(m, l, virtual_stage(l, pp_rank, c));
    const auto it = std::find(seen.begin(), seen.end(), shape);
    if (it != seen.end()) {
      ++shapes[static_cast<size_t>(it - seen.begin())].second;
      continue;
    }
    seen.push_back(shape);
    shapes.emplace_back(c, 1);
  }
  return shapes;
}

int moe_layers(const Model& m, LayerRange layers) {
  int n = 0;
  for (int layer = layers.begin; layer < layers.end; ++layer) n += m.is_moe_layer(layer) ? 1 : 0;
  return n;
}

// A micro-batch's passes over each chunk: the forward's receive, units and send, then the
// backward's, then (under a split backward) the layers' weight gradients.
void add_passes(Folder& f, const Model& m, const Training& t, const Layout& l, int64_t rank) {
  const RankCoord coord = rank_coord(l, rank);
  const int last_stage = l.pp * l.vpp - 1;
  const sd::UnitKinds kinds = sd::unit_kinds(m, t, l, true);
  const int64_t p2p = sd::p2p_bytes(m, t, l);
  // The rank holding virtual stage `stage`, or −1 when it is this one (nothing is sent).
  const auto holder = [&](int stage) -> int64_t {
    RankCoord c = coord;
    c.pp = stage_slot(l, stage).pp_rank;
    return c.pp == coord.pp ? -1 : rank_of(l, c);
  };
  for (const auto& [c, times] : chunk_shapes(m, l, coord.pp)) {
    const int vs = virtual_stage(l, coord.pp, c);
    const int64_t previous_rank = vs > 0 ? holder(vs - 1) : -1;
    const int64_t next_rank = vs < last_stage ? holder(vs + 1) : -1;
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    const int64_t moe = moe_layers(m, layers), dense = layers.end - layers.begin - moe;
    const auto message = [&, c = c, times = times](ActionKind kind, Pass pass, int64_t peer) {
      f.add(Action{.kind = kind,
                   .stream = Stream::pp_comm,
                   .pass = pass,
                   .micro_batch = 0,
                   .chunk = c,
                   .peer = peer,
                   .bytes = p2p},
            times, 0);
    };
    if (previous_rank >= 0) message(ActionKind::recv, Pass::forward, previous_rank);
    if (vs == 0) f.add_steps(kinds.embedding.forward, times);
    f.add_steps(kinds.dense.forward, times * dense);
    f.add_steps(kinds.moe.forward, times * moe);
    if (vs == last_stage) f.add_steps(kinds.head.forward, times);
    if (next_rank >= 0) message(ActionKind::send, Pass::forward, next_rank);
    if (next_rank >= 0) message(ActionKind::recv, Pass::backward, next_rank);
    if (vs == last_stage) f.add_steps(kinds.head.backward, times);
    f.add_steps(kinds.moe.backward, times * moe);
    f.add_steps(kinds.dense.backward, times * dense);
    if (vs == 0) f.add_steps(kinds.embedding.backward, times);
    if (previous_rank >= 0) message(ActionKind::send, Pass::backward, previous_rank);
    f.add_steps(kinds.moe.weight_grad, times * moe);
    f.add_steps(kinds.dense.weight_grad, times * dense);
  }
}

// The data-parallel actions over the chunks' units (without their steps), then the step's end.
void add_data_parallel(Folder& f, const Model& m, const Training& t, const Layout& l,
                       int64_t rank) {
  const int pp_rank = rank_coord(l, rank).pp;
  const int last_stage = l.pp * l.vpp - 1;
  const sd::UnitKinds kinds = sd::unit_kinds(m, t, l, false);
  const std::vector<std::pair<int, int64_t>> shapes = chunk_shapes(m, l, pp_rank);
  std::vector<sd::Chunk> chunks;  // one of each shape, numbered in `shapes`' order
  sd::StageParams params;
  for (const auto& [c, times] : shapes) {
    const int vs = virtual_stage(l, pp_rank, c);
    sd::Chunk chunk{static_cast<int>(chunks.size()), vs, {}};
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    chunk.units.reserve(static_cast<size_t>(layers.end - layers.begin + 2));
    if (vs == 0) chunk.units.push_back(bare(kinds.embedding, 0, 0));
    for (int layer = layers.begin; layer < layers.end; ++layer)
      chunk.units.push_back(bare(m.is_moe_layer(layer) ? kinds.moe : kinds.dense, layer, layer + 1));
    if (vs == last_stage) chunk.units.push_back(bare(kinds.head, m.num_layers, m.num_layers));
    params.add(chunk, times);
    chunks.push_back(std::move(chunk));
  }
  const sd::DataParallel dp = sd::plan_data_parallel(t, l, chunks);
  const int64_t every_microbatch = sd::reduces_every_microbatch(l.zero) ? 1 : 0;
  for (const sd::Chunk& c : chunks) {
    const int64_t times = shapes[static_cast<size_t>(c.chunk)].second;
    for (const sd::Bucket& b : dp.buckets[static_cast<size_t>(c.chunk)]) {
      if (l.zero == 1 || l.zero == 2) f.add(sd::step_start_gather(dp, c, b), 0, times);
      if (l.zero == 3) {
        f.add(sd::unit_gather(dp, c, b, 0, Pass::forward), times, 0);
        f.add(sd::unit_gather(dp, c, b, 0, Pass::backward), times, 0);
      }
      f.add(sd::bucket_reduction(dp, c, b, 0), times * every_microbatch,
            times * (1 - every_microbatch));
    }
  }
  for (const Action& a :
       sd::step_end_actions(dp, m, l, params, sd::holds_embedding_pair(m, l, pp_rank)))
    f.add(a, 0, 1);
}

}  // namespace

std::vector<FoldedAction> fold_passes(const Model& m, const Training& t, const Layout& l,
                                      int64_t rank) {
  Folder f;
  add_passes(f, m, t, l, rank);
  return f.take();
}

void passes_split_key(const Model& m, const Layout& l, int64_t rank, std::vector<int>& key) {
  const int pp_rank = rank_coord(l, rank).pp;
  key.clear();
  for (int c = 0; c < l.vpp; ++c) {
    const ChunkShape shape = chunk_shape(m, l, virtual_stage(l, pp_rank, c));
    key.push_back(shape.layers);
    key.push_back(shape.moe_phase);
  }
}

std::vector<FoldedAction> fold_data_parallel(const Model& m, const Training& t, const Layout& l,
                                             int64_t rank) {
  Folder f;
  add_data_parallel(f, m, t, l, rank);
  return f.take();
}

std::vector<FoldedAction> fold_program(const Model& m, const Training& t, const Layout& l,
                                       int64_t rank) {
  Folder f;
  add_passes(f, m, t, l, rank);
  add_data_parallel(f, m, t, l, rank);
  return f.take();
}

}  // namespace shardplan
