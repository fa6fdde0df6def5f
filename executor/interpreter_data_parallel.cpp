// The data-parallel side of the interpreter (interpreter_state.h): gradient reductions over dp
// (dp × cp) and the norms' over tp and the tied embedding's over the first and last stage, ZeRO's
// parameter gathers and shards (per unit: zero_shards.h), the optimizer step, and the full state
// gathered and loaded.
#include <algorithm>
#include <cassert>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "executor/interpreter_state.h"

#include "executor/runtime/world_comm.h"
#include "executor/state/action_ranges.h"
#include "executor/state/whole_layout.h"
#include "executor/state/zero_collectives.h"

namespace shardplan {

template <class T>
T* RankState<T>::owned_grads(size_t u) {
  return l.zero >= 2 ? grad_shard.data() + shards.offsets[u] : grads.data() + shards.mine(u).begin;
}

template <class T>
Buffer<T> RankState<T>::pieces_in_zeros(ElementRange range) {
  Buffer<T> full = side_buffer<T>(*rt, MemoryCategory::buffers, range.count(), "tensor gradient");
  for (size_t u = 0; u < shards.units.size(); ++u) {
    const ElementRange mine = shards.mine(u);
    const int64_t begin = std::max(range.begin, mine.begin), end = std::min(range.end, mine.end);
    if (begin < end)
      dev.copy(full.data() + (begin - range.begin), owned_grads(u) + (begin - mine.begin),
               end - begin);
  }
  return full;
}

template <class T>
void RankState<T>::take_pieces(const Buffer<T>& full, ElementRange range) {
  for (size_t u = 0; u < shards.units.size(); ++u) {
    const ElementRange mine = shards.mine(u);
    const int64_t begin = std::max(range.begin, mine.begin), end = std::min(range.end, mine.end);
    if (begin < end)
      dev.copy(owned_grads(u) + (begin - mine.begin), full.data() + (begin - range.begin),
               end - begin);
  }
}

template <class T>
void RankState<T>::all_reduce_tensor_grads(GroupComm& comm, ElementRange range) {
  // Without ZeRO, or with a ZeRO-1 reduced whole, every rank holds the whole reduced gradients.
  if (l.zero == 0 || zero1_reduced_whole(t, l))
    return comm.all_reduce(
        std::span<T>(grads.data() + range.begin, static_cast<size_t>(range.count())),
        ReduceOp::sum);
  Buffer<T> full = pieces_in_zeros(range);
  comm.all_reduce(full.span(), ReduceOp::sum);
  take_pieces(full, range);
  rt->release_after_use(std::move(full));
}

template <class T>
ElementRange RankState<T>::word_embedding_range() const {
  const ParamTensor& x = layout.get(shard.embedding ? "wte" : "lm_head");
  return {x.offset, x.offset + x.count()};
}

template <class T>
void RankState<T>::grad_reduce(const Action& a) {
  if (a.group == Group::tp) {
    for (const ParamTensor& x : layout.tensors)
      if (x.split == TensorSplit::replicated)
        all_reduce_tensor_grads(tp, {x.offset, x.offset + x.count()});
    return;
  }
  if (a.group == Group::pp) {
    if (!assembled_word_embedding)
      return all_reduce_tensor_grads(*rt->embedding_group(), word_embedding_range());
    rt->embedding_group()->all_reduce(assembled_word_embedding->span(), ReduceOp::sum);
    take_pieces(*assembled_word_embedding, word_embedding_range());
    rt->release_after_use(std::move(*assembled_word_embedding));
    assembled_word_embedding.reset();
    return;
  }
  // The tied embedding's pieces summed over the ZeRO group before the pair's sum: under ZeRO the
  // one all-reduce over it that covers no bucket's layers (core/schedule.h: grad_reduce); buckets
  // reduce-scatter, or, a ZeRO-1 reduced whole, all-reduce below.
  if (l.zero >= 1 && a.op == Collective::all_reduce && a.parts == 0) {
    assembled_word_embedding = pieces_in_zeros(word_embedding_range());
    return rt->group(a.group).all_reduce(assembled_word_embedding->span(), ReduceOp::sum);
  }
  // ZeRO-3: the unit's own gradients, from the backward this reduction follows (its one
  // dependency), which the head's include the tied word embedding it borrowed under pp = 1.
  if (l.zero >= 3) return zero3.reduce_scatter(program.deps_of(a).front(), grad_shard.data());
  GroupComm& comm = rt->group(a.group);
  for (const ElementRange r : action_ranges(layout, a)) {
    if (a.op == Collective::all_reduce) {
      comm.all_reduce(std::span<T>(grads.data() + r.begin, static_cast<size_t>(r.count())),
                      ReduceOp::sum);
      continue;
    }
    for (const size_t u : shards.units_in(r)) {
      const ElementRange unit = shards.units[u];
      const std::span<const T> full(grads.data() + unit.begin, static_cast<size_t>(unit.count()));
      if (l.zero == 2) {  // ZeRO-2 keeps the shard; the bucket starts the next micro-batch at 0
        reduce_scatter_add<T>(*rt, comm, shards, u, full, grad_shard.data());
        dev.fill(grads.data() + unit.begin, unit.count(), T(0));
        continue;
      }
      // ZeRO-1: the reduced piece back into the buffer the optimizer steps.
      Buffer<T> part = side_buffer<T>(*rt, MemoryCategory::buffers, shards.piece(u),
                                      "reduce-scatter output", /*for_overwrite=*/true);
      reduce_scatter_unit<T>(*rt, comm, shards, u, full, part.data());
      dev.copy(owned_grads(u), part.data(), shards.mine(u).count());
      rt->release_after_use(std::move(part));
    }
  }
}

template <class T>
void RankState<T>::param_gather(const Action& a, uint32_t index) {
  if (l.zero >= 3) return zero3.gather(index, action_ranges(layout, a), param_shard.data());
  for (const ElementRange r : action_ranges(layout, a))
    for (const size_t u : shards.units_in(r)) {
      const ElementRange unit = shards.units[u];
      all_gather_unit<T>(*rt, rt->group(a.group), shards, u, params.data() + shards.mine(u).begin,
                         {params.data() + unit.begin, static_cast<size_t>(unit.count())});
    }
}

template <class T>
void RankState<T>::optimizer_step() {
  if (l.zero == 0) return adam_step<T>(dev, settings.adam, adam, params.span(), grads.span());
  if (l.zero >= 3)
    return adam_step<T>(dev, settings.adam, adam, param_shard.span(), grad_shard.span());
  std::vector<AdamPiece<T>> pieces;
  for (size_t u = 0; u < shards.units.size(); ++u)
    pieces.push_back({params.data() + shards.mine(u).begin, owned_grads(u), shards.offsets[u],
                      shards.mine(u).count()});
  adam_step<T>(dev, settings.adam, adam, pieces);
}

template <class T>
std::vector<float> RankState<T>::rank_flat(const float* owned) {
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
    all_gather_unit<float>(*rt, comm, shards, u, owned + shards.offsets[u], gathered.span());
    dev.copy_to_host(flat.data() + unit.begin, gathered.data(),
                     unit.count() * static_cast<int64_t>(sizeof(float)));
  }
  return flat;
}

template <class T>
std::vector<float> RankState<T>::whole(const float* owned) {
  return to_whole_layout(m, layout, program.coord, rank_flat(owned));
}

template <class T>
std::vector<float> RankState<T>::whole_params() {
  if (!adam.master.empty()) return whole(adam.master.data());
  if constexpr (std::is_same_v<T, float>) {
    if (l.zero == 0) return whole(params.data());
    if (l.zero >= 3) return whole(param_shard.data());
    Buffer<float> owned =
        alloc.allocate<float>(MemoryCategory::buffers, shards.padded(), "parameter pieces");
    own_shard(params.data(), owned);
    return whole(owned.data());
  } else {
    assert(false && "weights narrower than fp32 have a master copy");
    return {};
  }
}

template <class T>
void RankState<T>::own_shard(const float* flat, Buffer<float>& into) {
  Kernels<float>& f32 = rt->kernels<float>();
  f32.fill(into.data(), into.size(), 0.0f);
  for (size_t u = 0; u < shards.units.size(); ++u)
    f32.copy(into.data() + shards.offsets[u], flat + shards.mine(u).begin, shards.mine(u).count());
}

template <class T>
std::vector<float> RankState<T>::owned_part(const std::vector<float>& flat) const {
  std::vector<float> part(static_cast<size_t>(shards.padded()), 0.0f);
  for (size_t u = 0; u < shards.units.size(); ++u) {
    const ElementRange mine = shards.mine(u);
    std::copy(flat.begin() + mine.begin, flat.begin() + mine.end, part.begin() + shards.offsets[u]);
  }
  return part;
}

template <class T>
FullState RankState<T>::gather_full_state() {
  FullState out;
  out.params = whole_params();
  out.adam_m = whole(adam.m.data());
  out.adam_v = whole(adam.v.data());
  out.adam_step = adam.step;
  return out;
}

template <class T>
void RankState<T>::load_full_state(const FullState& state) {
  streams.select(Stream::compute);
  // Each of what this rank owns taken from the whole model's layout: its flat buffer, or its
  // ZeRO shard of it (parameters under ZeRO-3, master weights and Adam's moments under ZeRO-1 and
  // above).
  std::vector<float> flat(static_cast<size_t>(layout.total));
  from_whole_layout(m, layout, state.params, flat.data());
  set_owned_parameters(l.zero >= 3 ? owned_part(flat) : flat);
  for (auto [whole, into] :
       {std::pair{&state.adam_m, &adam.m}, std::pair{&state.adam_v, &adam.v}}) {
    from_whole_layout(m, layout, *whole, flat.data());
    to_device(into->data(), l.zero >= 1 ? owned_part(flat) : flat);
  }
  dev.synchronize();
  adam.step = world_broadcast(state.adam_step, 0);
}

// The members defined in this file, for both storage types (interpreter.cpp instantiates its own).
#define SHARDPLAN_INSTANTIATE(T)                                                         \
  template void RankState<T>::grad_reduce(const Action&);                                \
  template void RankState<T>::param_gather(const Action&, uint32_t);                     \
  template void RankState<T>::optimizer_step();                                          \
  template std::vector<float> RankState<T>::owned_part(const std::vector<float>&) const; \
  template std::vector<float> RankState<T>::whole_params();                              \
  template FullState RankState<T>::gather_full_state();                                  \
  template void RankState<T>::load_full_state(const FullState&);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

std::vector<float> RankInterpreter::gather_full_parameters() {
  return s_->whole_params();
}

FullState RankInterpreter::gather_full_state() {
  return s_->gather_full_state();
}

void RankInterpreter::load_full_state(const FullState& state) {
  s_->load_full_state(state);
}

}  // namespace shardplan
