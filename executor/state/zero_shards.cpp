#include "executor/state/zero_shards.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "executor/state/action_ranges.h"

namespace shardplan {

ElementRange ZeroShards::piece_of(size_t u, int member) const {
  const ElementRange unit = units[u];
  const int64_t p = piece(u);
  return {std::min(unit.end, unit.begin + member * p),
          std::min(unit.end, unit.begin + (member + 1) * p)};
}

std::vector<size_t> ZeroShards::units_in(ElementRange range) const {
  std::vector<size_t> out;
  for (size_t u = 0; u < units.size(); ++u)
    if (range.begin <= units[u].begin && units[u].end <= range.end) out.push_back(u);
  assert(!out.empty() && units[out.front()].begin == range.begin &&
         units[out.back()].end == range.end);
  return out;
}

ZeroShards zero_shards(std::vector<int64_t> edges, int64_t total, int members, int index) {
  edges.push_back(0);
  edges.push_back(total);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  ZeroShards s;
  s.members = members;
  s.index = index;
  s.offsets.push_back(0);
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    s.units.push_back({edges[i], edges[i + 1]});
    s.offsets.push_back(s.offsets.back() + s.piece(s.units.size() - 1));
  }
  return s;
}

ZeroShards zero_shards(const Program& p, const ParamLayout& layout, Group zero_group, int members,
                       int index) {
  std::vector<int64_t> edges;
  for (const Action& a : p.actions) {
    const bool zero_collective =
        (a.kind == ActionKind::grad_reduce || a.kind == ActionKind::param_gather) &&
        a.group == zero_group;
    if (!zero_collective) continue;
    for (const ElementRange r : action_ranges(layout, a)) {
      edges.push_back(r.begin);
      edges.push_back(r.end);
    }
  }
  return zero_shards(std::move(edges), layout.total, members, index);
}

}  // namespace shardplan
