#include "executor/zero3_units.h"

#include <algorithm>
#include <cassert>
#include <utility>

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

void reduce_scatter_add(RankRuntime& rt, GroupComm& comm, const FlatShards& shards,
                        ElementRange range, const float* full, float* shard) {
  const ElementRange mine = shards.mine();
  const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                end = std::clamp(range.end, mine.begin, mine.end);
  Buffer<float> part =
      side_buffer(rt, MemoryCategory::buffers, end - begin, "reduce-scatter output");
  comm.reduce_scatter_range(shards, range, full, part.data());
  rt.kernels().residual_add(shard + (begin - mine.begin), part.data(), nullptr, 1, part.size());
  rt.release_after_use(std::move(part));
}

Zero3Units::Zero3Units(RankRuntime& rt, Group zero_group, const FlatShards& shards)
    : rt_(rt), comm_(rt.group(zero_group)), shards_(shards) {}

void Zero3Units::gather(uint32_t gather, const std::vector<ElementRange>& ranges,
                        const float* param_shard) {
  const ElementRange mine = shards_.mine();
  Unit u{ranges, {}};
  for (const ElementRange r : ranges) {
    Buffer<float> full =
        side_buffer(rt_, MemoryCategory::buffers, r.count(), "gathered parameters");
    const int64_t begin = std::clamp(r.begin, mine.begin, mine.end);
    comm_.all_gather_range(shards_, r, param_shard + (begin - mine.begin), full.data());
    u.buffers.push_back(std::move(full));
  }
  const bool fresh = params_.emplace(gather, std::move(u)).second;
  assert(fresh);
  (void)fresh;
}

FlatView<const float> Zero3Units::params(uint32_t gather) const {
  const Unit& u = params_.at(gather);
  return view_of<const float>(u.ranges, u.buffers);
}

void Zero3Units::release(Unit& u) {
  for (Buffer<float>& b : u.buffers) rt_.release_after_use(std::move(b));
}

void Zero3Units::reshard(uint32_t gather) {
  const auto it = params_.find(gather);
  assert(it != params_.end());
  release(it->second);
  params_.erase(it);
}

FlatView<float> Zero3Units::start_gradients(uint32_t gather, uint32_t compute) {
  Unit u{params_.at(gather).ranges, {}};
  for (const ElementRange r : u.ranges)
    u.buffers.push_back(
        rt_.allocator().allocate<float>(MemoryCategory::buffers, r.count(), "unit gradients"));
  const auto [it, fresh] = grads_.emplace(compute, std::move(u));
  assert(fresh);
  (void)fresh;
  return view_of<float>(it->second.ranges, it->second.buffers);
}

void Zero3Units::reduce_scatter(uint32_t compute, float* grad_shard) {
  const auto it = grads_.find(compute);
  assert(it != grads_.end());
  Unit& u = it->second;
  for (size_t i = 0; i < u.ranges.size(); ++i)
    reduce_scatter_add(rt_, comm_, shards_, u.ranges[i], u.buffers[i].data(), grad_shard);
  release(u);
  grads_.erase(it);
}

}  // namespace shardplan
