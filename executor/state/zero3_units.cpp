#include "executor/state/zero3_units.h"

#include <cassert>
#include <span>
#include <utility>

#include "executor/state/zero_collectives.h"

namespace shardplan {

namespace {

// The flat buffer's units `g` holds, each at its buffer.
template <class T, class Held>
FlatView<T> view_of(const ZeroShards& s, Held& g) {
  FlatView<T> v;
  for (size_t i = 0; i < g.units.size(); ++i)
    v.pieces.push_back({s.units[g.units[i]], g.buffers[i].data()});
  return v;
}

}  // namespace

std::optional<uint32_t> unit_gather(const Program& p, size_t first, size_t last) {
  for (size_t i = first; i < last; ++i) {
    if (p.actions[i].kind != ActionKind::compute) continue;
    for (const uint32_t d : p.deps_of(p.actions[i]))
      if (p.actions[d].kind == ActionKind::param_gather) return d;
    return std::nullopt;
  }
  assert(false && "a unit pass has a compute action");
  return std::nullopt;
}

uint32_t last_compute(const Program& p, size_t first, size_t last) {
  for (size_t i = last; i-- > first;)
    if (p.actions[i].kind == ActionKind::compute) return static_cast<uint32_t>(i);
  assert(false && "a unit pass has a compute action");
  return 0;
}

std::optional<size_t> ready_gather(const Program& p, size_t next,
                                   const std::vector<Stamp>& starts) {
  const auto issued = [&](size_t i) { return starts[i].index >= 0; };
  for (size_t g = next; g < p.actions.size(); ++g) {
    const Action& a = p.actions[g];
    if (a.kind != ActionKind::param_gather || issued(g)) continue;
    for (const uint32_t d : p.deps_of(a))
      if (d >= next && !issued(d)) return std::nullopt;
    return g;
  }
  return std::nullopt;
}

template <class T>
Zero3Units<T>::Zero3Units(RankRuntime& rt, Group zero_group, const ZeroShards& shards)
    : rt_(rt), comm_(rt.group(zero_group)), shards_(shards) {}

template <class T>
typename Zero3Units<T>::Unit Zero3Units<T>::allocate(const std::vector<size_t>& units,
                                                     const char* what, bool for_overwrite) {
  Unit out{units, {}};
  for (const size_t u : units)
    out.buffers.push_back(side_buffer<T>(rt_, MemoryCategory::buffers,
                                         shards_.members * shards_.piece(u), what, for_overwrite));
  return out;
}

template <class T>
void Zero3Units<T>::gather(uint32_t gather, const std::vector<ElementRange>& ranges,
                           const T* param_shard) {
  std::vector<size_t> units;
  for (const ElementRange r : ranges)
    for (const size_t u : shards_.units_in(r)) units.push_back(u);
  Unit g = allocate(units, "gathered parameters", /*for_overwrite=*/true);
  for (size_t i = 0; i < units.size(); ++i)
    all_gather_unit<T>(rt_, comm_, shards_, units[i], param_shard + shards_.offsets[units[i]],
                       g.buffers[i].span());
  const bool fresh = params_.emplace(gather, std::move(g)).second;
  assert(fresh);
  (void)fresh;
}

template <class T>
FlatView<const T> Zero3Units<T>::params(uint32_t gather) const {
  return view_of<const T>(shards_, params_.at(gather));
}

template <class T>
void Zero3Units<T>::release(Unit& u) {
  for (Buffer<T>& b : u.buffers) rt_.release_after_use(std::move(b));
}

template <class T>
void Zero3Units<T>::reshard(uint32_t gather) {
  const auto it = params_.find(gather);
  assert(it != params_.end());
  release(it->second);
  params_.erase(it);
}

template <class T>
FlatView<T> Zero3Units<T>::start_gradients(uint32_t gather, uint32_t compute) {
  const auto [it, fresh] =
      grads_.emplace(compute, allocate(params_.at(gather).units, "unit gradients",
                                       /*for_overwrite=*/false));  // the backward adds into them
  assert(fresh);
  (void)fresh;
  return view_of<T>(shards_, it->second);
}

template <class T>
void Zero3Units<T>::reduce_scatter(uint32_t compute, T* grad_shard) {
  const auto it = grads_.find(compute);
  assert(it != grads_.end());
  Unit& g = it->second;
  for (size_t i = 0; i < g.units.size(); ++i)
    reduce_scatter_add<T>(rt_, comm_, shards_, g.units[i], g.buffers[i].span(), grad_shard);
  release(g);
  grads_.erase(it);
}

template class Zero3Units<float>;
template class Zero3Units<bf16>;

}  // namespace shardplan
