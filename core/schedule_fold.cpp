// Folding a rank's program: the chunks' units made once per kind, their steps counted by how many
// layers of that kind the chunk holds, and the data-parallel actions made by the same functions
// build_program emits them with (schedule_data_parallel.cpp), over units that carry no steps.
#include "core/schedule_fold.h"

#include "core/schedule_detail.h"

namespace shardplan {
namespace sd = schedule_detail;
namespace {

class Folder {
 public:
  void add(const Action& a, int64_t per_microbatch, int64_t per_step) {
    if (per_microbatch == 0 && per_step == 0) return;
    for (FoldedAction& f : out_)
      if (same_priced_action(f.action, a) && (f.per_microbatch > 0) == (per_microbatch > 0)) {
        f.per_microbatch += per_microbatch;
        f.per_step += per_step;
        return;
      }
    Action kept = a;
    kept.deps_begin = kept.deps_count = 0;
    kept.flags = 0;
    out_.push_back({kept, per_microbatch, per_step});
  }
  void add_steps(const std::vector<Action>& steps, int64_t times) {
    for (const Action& a : steps) add(a, times, 0);
  }
  std::vector<FoldedAction> take() { return std::move(out_); }

 private:
  std::vector<FoldedAction> out_;
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

}  // namespace

bool same_priced_action(const Action& a, const Action& b) {
  return a.kind == b.kind && a.stream == b.stream && a.pass == b.pass && a.op == b.op &&
         a.group == b.group && a.bytes == b.bytes && a.params == b.params &&
         (a.kind != ActionKind::compute || a.parts == b.parts) &&
         reads_cold_input(a) == reads_cold_input(b);
}

std::vector<FoldedAction> fold_program(const Model& m, const Training& t, const Layout& l,
                                       int64_t rank) {
  const RankCoord coord = rank_coord(l, rank);
  const sd::UnitKinds kinds = sd::unit_kinds(m, t, l);
  const int last_stage = l.pp * l.vpp - 1;
  const int64_t p2p = sd::p2p_bytes(m, t, l);
  Folder f;
  std::vector<sd::Chunk> chunks;
  for (int c = 0; c < l.vpp; ++c) {
    const int vs = virtual_stage(l, coord.pp, c);
    sd::Chunk chunk{c, vs, {}};
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    chunk.units.reserve(static_cast<size_t>(layers.end - layers.begin + 2));
    int64_t moe = 0;
    if (vs == 0) chunk.units.push_back(bare(kinds.embedding, 0, 0));
    for (int layer = layers.begin; layer < layers.end; ++layer) {
      const bool is_moe = m.is_moe_layer(layer);
      moe += is_moe ? 1 : 0;
      chunk.units.push_back(bare(is_moe ? kinds.moe : kinds.dense, layer, layer + 1));
    }
    if (vs == last_stage) chunk.units.push_back(bare(kinds.head, m.num_layers, m.num_layers));

    // A micro-batch's passes: the forward's receive, units and send, then the backward's.
    const auto message = [&](ActionKind kind, Pass pass, int peer_stage) {
      RankCoord peer = coord;
      peer.pp = peer_stage % l.pp;
      f.add(Action{.kind = kind,
                   .stream = Stream::pp_comm,
                   .pass = pass,
                   .micro_batch = 0,
                   .chunk = c,
                   .peer = rank_of(l, peer),
                   .bytes = p2p},
            1, 0);
    };
    if (vs > 0) message(ActionKind::recv, Pass::forward, vs - 1);
    if (vs == 0) f.add_steps(kinds.embedding.forward, 1);
    f.add_steps(kinds.dense.forward, layers.end - layers.begin - moe);
    f.add_steps(kinds.moe.forward, moe);
    if (vs == last_stage) f.add_steps(kinds.head.forward, 1);
    if (vs < last_stage) message(ActionKind::send, Pass::forward, vs + 1);
    if (vs < last_stage) message(ActionKind::recv, Pass::backward, vs + 1);
    if (vs == last_stage) f.add_steps(kinds.head.backward, 1);
    f.add_steps(kinds.moe.backward, moe);
    f.add_steps(kinds.dense.backward, layers.end - layers.begin - moe);
    if (vs == 0) f.add_steps(kinds.embedding.backward, 1);
    if (vs > 0) message(ActionKind::send, Pass::backward, vs - 1);
    chunks.push_back(std::move(chunk));
  }

  const sd::DataParallel dp = sd::plan_data_parallel(t, l, chunks);
  const int64_t every_microbatch = sd::reduces_every_microbatch(l.zero) ? 1 : 0;
  for (const sd::Chunk& c : chunks)
    for (const sd::Bucket& b : dp.buckets[static_cast<size_t>(c.chunk)]) {
      if (l.zero == 1 || l.zero == 2) f.add(sd::step_start_gather(dp, c, b), 0, 1);
      if (l.zero == 3) {
        f.add(sd::unit_gather(dp, c, b, 0, Pass::forward), 1, 0);
        f.add(sd::unit_gather(dp, c, b, 0, Pass::backward), 1, 0);
      }
      f.add(sd::bucket_reduction(dp, c, b, 0), every_microbatch, 1 - every_microbatch);
    }
  for (const Action& a :
       sd::step_end_actions(dp, m, l, chunks, sd::holds_embedding_pair(m, l, coord.pp)))
    f.add(a, 0, 1);
  return f.take();
}

}  // namespace shardplan
