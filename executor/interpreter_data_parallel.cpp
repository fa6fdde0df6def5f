// The data-parallel side of the interpreter (interpreter_state.h): gradient reductions over dp
// (dp × cp) and the norms' over tp and the tied embedding's over the first and last stage, ZeRO's
// parameter gathers and shards (per unit: zero_shards.h), the optimizer step, and the full state
// gathered and loaded.
#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <span>
#include <tuple>
#include <vector>

#include "executor/action_ranges.h"
#include "executor/interpreter_state.h"
#include "executor/whole_layout.h"
#include "executor/zero_collectives.h"

namespace shardplan {

float* RankInterpreter::State::owned_grads(size_t u) {
  return l.zero >= 2 ? grad_shard.data() + shards.offsets[u] : grads.data() + shards.mine(u).begin;
}

void RankInterpreter::State::all_reduce_tensor_grads(GroupComm& comm, ElementRange range) {
  if (l.zero == 0)
    return comm.all_reduce({grads.data() + range.begin, static_cast<size_t>(range.count())},
                           ReduceOp::sum);
  // The tensor assembled from the members' pieces: each adds its own to zeros, so the sum over
  // zero_group is every piece in place, exactly.
  Buffer<float> full = side_buffer(*rt, MemoryCategory::buffers, range.count(), "tensor gradient");
  const auto each_piece = [&](auto&& f) {
    for (size_t u = 0; u < shards.units.size(); ++u) {
      const ElementRange mine = shards.mine(u);
      const int64_t begin = std::max(range.begin, mine.begin), end = std::min(range.end, mine.end);
      if (begin < end)
        f(owned_grads(u) + (begin - mine.begin), full.data() + (begin - range.begin), end - begin);
    }
  };
  each_piece([&](float* owned, float* in_full, int64_t n) { dev.copy(in_full, owned, n); });
  rt->group(zero_group).all_reduce(full.span(), ReduceOp::sum);
  comm.all_reduce(full.span(), ReduceOp::sum);
  each_piece([&](float* owned, float* in_full, int64_t n) { dev.copy(owned, in_full, n); });
  rt->release_after_use(std::move(full));
}

void RankInterpreter::State::grad_reduce(const Action& a) {
  if (a.group == Group::tp) {
    for (const ParamTensor& x : layout.tensors)
      if (x.split == TensorSplit::replicated)
        all_reduce_tensor_grads(tp, {x.offset, x.offset + x.count()});
    return;
  }
  if (a.group == Group::pp) {
    const ParamTensor& x = layout.get(shard.embedding ? "wte" : "lm_head");
    return all_reduce_tensor_grads(*rt->embedding_group(), {x.offset, x.offset + x.count()});
  }
  // ZeRO-3: the unit's own gradients, from the backward this reduction follows (its one
  // dependency), which the head's include the tied word embedding it borrowed under pp = 1.
  if (l.zero >= 3) return zero3.reduce_scatter(program.deps_of(a).front(), grad_shard.data());
  GroupComm& comm = rt->group(a.group);
  for (const ElementRange r : action_ranges(layout, a)) {
    if (a.op == Collective::all_reduce) {
      comm.all_reduce({grads.data() + r.begin, static_cast<size_t>(r.count())}, ReduceOp::sum);
      continue;
    }
    for (const size_t u : shards.units_in(r)) {
      const ElementRange unit = shards.units[u];
      const std::span<float> full(grads.data() + unit.begin, static_cast<size_t>(unit.count()));
      if (l.zero == 2) {  // ZeRO-2 keeps the shard; the bucket starts the next micro-batch at 0
        reduce_scatter_add(*rt, comm, shards, u, full, grad_shard.data());
        dev.fill(full.data(), unit.count(), 0.0f);
        continue;
      }
      // ZeRO-1: the reduced piece back into the buffer the optimizer steps.
      Buffer<float> part = side_buffer(*rt, MemoryCategory::buffers, shards.piece(u),
                                       "reduce-scatter output", /*for_overwrite=*/true);
      reduce_scatter_unit(*rt, comm, shards, u, full, part.data());
      dev.copy(owned_grads(u), part.data(), shards.mine(u).count());
      rt->release_after_use(std::move(part));
    }
  }
}

void RankInterpreter::State::param_gather(const Action& a, uint32_t index) {
  if (l.zero >= 3) return zero3.gather(index, action_ranges(layout, a), param_shard.data());
  for (const ElementRange r : action_ranges(layout, a))
    for (const size_t u : shards.units_in(r)) {
      const ElementRange unit = shards.units[u];
      all_gather_unit(*rt, rt->group(a.group), shards, u, params.data() + shards.mine(u).begin,
                      {params.data() + unit.begin, static_cast<size_t>(unit.count())});
    }
}

void RankInterpreter::State::optimizer_step() {
  if (l.zero == 0) return adam_step(dev, settings.adam, adam, params.span(), grads.span());
  if (l.zero >= 3)
    return adam_step(dev, settings.adam, adam, param_shard.span(), grad_shard.span());
  std::vector<AdamPiece> pieces;
  for (size_t u = 0; u < shards.units.size(); ++u)
    pieces.push_back({params.data() + shards.mine(u).begin, owned_grads(u), shards.offsets[u],
                      shards.mine(u).count()});
  adam_step(dev, settings.adam, adam, pieces);
}

std::vector<float> RankInterpreter::State::rank_flat(const float* owned) {
  std::vector<float> flat(static_cast<size_t>(layout.total));
  streams.select(Stream::compute);
  if (l.zero == 0) {
    dev.copy_to_host(flat.data(), owned, layout.total * static_cast<int64_t>(sizeof(float)));
    return flat;
  }
  GroupComm& comm = rt->group(zero_group);
  for (size_t u = 0; u < shards.units.size(); ++u) {
    const ElementRange unit = shards.units[u];
    Buffer<float> gathered = alloc.allocate<float>(
        MemoryCategory::buffers, shards.members * shards.piece(u), "gathered state");
    all_gather_unit(*rt, comm, shards, u, owned + shards.offsets[u], gathered.span());
    dev.copy_to_host(flat.data() + unit.begin, gathered.data(),
                     unit.count() * static_cast<int64_t>(sizeof(float)));
  }
  return flat;
}

std::vector<float> RankInterpreter::State::whole(const float* owned) {
  return to_whole_layout(m, layout, program.coord, rank_flat(owned));
}

std::vector<float> RankInterpreter::State::whole_params() {
  if (l.zero == 0) return whole(params.data());
  if (l.zero >= 3) return whole(param_shard.data());
  Buffer<float> owned =
      alloc.allocate<float>(MemoryCategory::buffers, shards.padded(), "parameter pieces");
  own_shard(params.data(), owned);
  return whole(owned.data());
}

void RankInterpreter::State::own_shard(const float* flat, Buffer<float>& into) {
  dev.fill(into.data(), into.size(), 0.0f);
  for (size_t u = 0; u < shards.units.size(); ++u)
    dev.copy(into.data() + shards.offsets[u], flat + shards.mine(u).begin, shards.mine(u).count());
}

std::vector<float> RankInterpreter::gather_full_parameters() {
  return s_->whole_params();
}

FullState RankInterpreter::gather_full_state() {
  State& s = *s_;
  FullState out;
  out.params = gather_full_parameters();
  out.adam_m = s.whole(s.adam.m.data());
  out.adam_v = s.whole(s.adam.v.data());
  out.adam_step = s.adam.step;
  return out;
}

void RankInterpreter::load_full_state(const FullState& state) {
  State& s = *s_;
  s.streams.select(Stream::compute);
  // Each of what this rank owns taken from the whole model's layout: its flat buffer, or its
  // ZeRO shard of it (parameters under ZeRO-3, Adam's moments under ZeRO-1 and above).
  std::vector<float> flat(static_cast<size_t>(s.layout.total));
  for (auto [whole, into, sharded] :
       {std::tuple{&state.params, s.l.zero >= 3 ? &s.param_shard : &s.params, s.l.zero >= 3},
        std::tuple{&state.adam_m, &s.adam.m, s.l.zero >= 1},
        std::tuple{&state.adam_v, &s.adam.v, s.l.zero >= 1}}) {
    from_whole_layout(s.m, s.layout, *whole, flat.data());
    if (!sharded) {
      s.to_device(into->data(), flat);
      continue;
    }
    Buffer<float> on_device =
        s.alloc.allocate<float>(MemoryCategory::buffers, s.layout.total, "loaded state");
    s.to_device(on_device.data(), flat);
    s.own_shard(on_device.data(), *into);
  }
  s.dev.synchronize();
  s.adam.step = state.adam_step;
  MPI_Bcast(&s.adam.step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
}

}  // namespace shardplan
