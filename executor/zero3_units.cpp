#include "executor/zero3_units.h"

#include <algorithm>
#include <cassert>

namespace shardplan {

namespace {

template <class T, class Buffers>
FlatView<T> view_of(const std::vector<ElementRange>& ranges, Buffers& buffers) {
  FlatView<T> v;
  for (size_t i = 0; i < ranges.size(); ++i) v.pieces.push_back({ranges[i], buffers[i].data()});
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

std::optional<size_t> ready_gather(const Program& p, size_t next, const std::vector<char>& ran) {
  for (size_t g = next; g < p.actions.size(); ++g) {
    const Action& a = p.actions[g];
    if (a.kind != ActionKind::param_gather || ran[g]) continue;
    for (const uint32_t d : p.deps_of(a))
      if (d >= next && !ran[d]) return std::nullopt;
    return g;
  }
  return std::nullopt;
}

void reduce_scatter_add(MPI_Comm comm, const FlatShards& shards, ElementRange range,
                        const float* full, float* shard, TensorAllocator& alloc) {
  const ElementRange mine = shards.mine();
  const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                end = std::clamp(range.end, mine.begin, mine.end);
  Buffer<float> part =
      alloc.allocate<float>(MemoryCategory::buffers, end - begin, "reduce-scatter output");
  reduce_scatter_range(comm, shards, range, full, part.data());
  float* into = shard + (begin - mine.begin);
  for (int64_t i = 0; i < part.size(); ++i) into[i] += part[i];
}

Zero3Units::Zero3Units(TensorAllocator& alloc, const FlatShards& shards, MPI_Comm comm)
    : alloc_(alloc), shards_(shards), comm_(comm) {}

Zero3Units::Unit Zero3Units::allocate(const std::vector<ElementRange>& ranges,
                                      const char* what) const {
  Unit u{ranges, {}};
  for (const ElementRange r : ranges)
    u.buffers.push_back(alloc_.allocate<float>(MemoryCategory::buffers, r.count(), what));
  return u;
}

void Zero3Units::gather(uint32_t gather, const std::vector<ElementRange>& ranges,
                        const float* param_shard) {
  const ElementRange mine = shards_.mine();
  Unit u = allocate(ranges, "gathered parameters");
  for (size_t i = 0; i < ranges.size(); ++i) {
    const int64_t begin = std::clamp(ranges[i].begin, mine.begin, mine.end);
    all_gather_range(comm_, shards_, ranges[i], param_shard + (begin - mine.begin),
                     u.buffers[i].data());
  }
  const bool fresh = params_.emplace(gather, std::move(u)).second;
  assert(fresh);
  (void)fresh;
}

FlatView<const float> Zero3Units::params(uint32_t gather) const {
  const Unit& u = params_.at(gather);
  return view_of<const float>(u.ranges, u.buffers);
}

void Zero3Units::reshard(uint32_t gather) {
  params_.erase(gather);
}

FlatView<float> Zero3Units::start_gradients(uint32_t gather, uint32_t compute) {
  const auto [it, fresh] =
      grads_.emplace(compute, allocate(params_.at(gather).ranges, "unit gradients"));
  assert(fresh);
  (void)fresh;
  return view_of<float>(it->second.ranges, it->second.buffers);
}

void Zero3Units::reduce_scatter(uint32_t compute, float* grad_shard) {
  const auto it = grads_.find(compute);
  assert(it != grads_.end());
  const Unit& u = it->second;
  for (size_t i = 0; i < u.ranges.size(); ++i)
    reduce_scatter_add(comm_, shards_, u.ranges[i], u.buffers[i].data(), grad_shard, alloc_);
  grads_.erase(it);
}

}  // namespace shardplan
