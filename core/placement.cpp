#include "core/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace shardplan {

namespace {

// The grid's axes as rank_order names them; the "dp" axis of the grid is dp/ep (expert data
// parallelism), the ep axis carved out of dp as Megatron-Core's RankGenerator does.
enum Axis : int { kTp, kCp, kEp, kEdp, kPp, kNumAxes };
constexpr std::array<std::string_view, kNumAxes> kAxisNames{"tp", "cp", "ep", "dp", "pp"};

using AxisOrder = std::array<Axis, kNumAxes>;

// Reads "tp-cp-ep-dp-pp" into axes, fastest-varying first. Returns what is wrong, "" if nothing.
std::string parse_rank_order(std::string_view order, AxisOrder& axes) {
  std::array<bool, kNumAxes> seen{};
  size_t n = 0;
  for (size_t pos = 0;;) {
    const size_t dash = order.find('-', pos);
    const std::string_view token =
        order.substr(pos, dash == std::string_view::npos ? dash : dash - pos);
    const auto it = std::find(kAxisNames.begin(), kAxisNames.end(), token);
    if (it == kAxisNames.end()) return fmt::format("unknown axis \"{}\"", token);
    const auto a = static_cast<Axis>(it - kAxisNames.begin());
    if (seen[a]) return fmt::format("\"{}\" appears twice", token);
    seen[a] = true;
    axes[n++] = a;
    if (dash == std::string_view::npos) break;
    pos = dash + 1;
  }
  for (int a = 0; a < kNumAxes; ++a)
    if (!seen[a]) return fmt::format("\"{}\" is missing", kAxisNames[a]);
  return "";
}

// Sizes of the axes and their strides in the global rank, from the layout's rank order
// (the first axis has stride 1): rank = sum over axes of coordinate * stride.
struct Grid {
  std::array<int64_t, kNumAxes> size{};
  std::array<int64_t, kNumAxes> stride{};
};

// The axes of a rank order that validate_rank_order accepted: five two-letter names at fixed
// places, told apart by their first letter. Called for every placement query, so it reads five
// characters instead of parsing.
AxisOrder axis_order(std::string_view order) {
  assert(order.size() == 3 * kNumAxes - 1 && "rank_order is checked by validate_rank_order");
  AxisOrder axes{};
  for (size_t i = 0; i < axes.size(); ++i) {
    switch (order[3 * i]) {
      case 't':
        axes[i] = kTp;
        break;
      case 'c':
        axes[i] = kCp;
        break;
      case 'e':
        axes[i] = kEp;
        break;
      case 'd':
        axes[i] = kEdp;
        break;
      default:
        axes[i] = kPp;
        break;
    }
  }
  [[maybe_unused]] AxisOrder parsed{};
  assert(parse_rank_order(order, parsed).empty() && parsed == axes);
  return axes;
}

Grid grid_of(const Layout& l) {
  assert(l.ep >= 1 && l.dp % l.ep == 0 && "ep divides dp (validate_layout)");
  Grid g;
  g.size = {l.tp, l.cp, l.ep, l.dp / l.ep, l.pp};
  int64_t stride = 1;
  for (Axis a : axis_order(l.rank_order)) {
    g.stride[a] = stride;
    stride *= g.size[a];
  }
  return g;
}

std::array<int64_t, kNumAxes> grid_coords(const Grid& g, int64_t rank) {
  std::array<int64_t, kNumAxes> c{};
  for (int a = 0; a < kNumAxes; ++a) c[a] = rank / g.stride[a] % g.size[a];
  return c;
}

// The axes a group of kind g spans, the fastest-varying member first: dp counts ep + ep·(dp/ep),
// dp_cp counts cp + cp·dp.
std::span<const Axis> group_axes(Group g) {
  static constexpr Axis tp[] = {kTp}, cp[] = {kCp}, ep[] = {kEp}, pp[] = {kPp};
  static constexpr Axis dp[] = {kEp, kEdp}, expert_dp[] = {kEdp}, dp_cp[] = {kCp, kEp, kEdp};
  switch (g) {
    case Group::tp:
      return tp;
    case Group::cp:
      return cp;
    case Group::ep:
      return ep;
    case Group::dp:
      return dp;
    case Group::expert_dp:
      return expert_dp;
    case Group::dp_cp:
      return dp_cp;
    case Group::pp:
      return pp;
  }
  assert(false && "unknown group");
  return tp;
}

void assert_rank(const Layout& l, int64_t rank) {
  assert(rank >= 0 && rank < l.world());
  (void)l, (void)rank;
}

}  // namespace

RankCoord rank_coord(const Layout& l, int64_t rank) {
  assert_rank(l, rank);
  const auto c = grid_coords(grid_of(l), rank);
  return {static_cast<int>(c[kTp]), static_cast<int>(c[kCp]), static_cast<int>(c[kEp]),
          static_cast<int>(c[kEp] + l.ep * c[kEdp]), static_cast<int>(c[kPp])};
}

int64_t rank_of(const Layout& l, const RankCoord& c) {
  assert(c.tp >= 0 && c.tp < l.tp && c.cp >= 0 && c.cp < l.cp && c.dp >= 0 && c.dp < l.dp &&
         c.pp >= 0 && c.pp < l.pp && c.ep == c.dp % l.ep);
  const Grid g = grid_of(l);
  return c.tp * g.stride[kTp] + c.cp * g.stride[kCp] + (c.dp % l.ep) * g.stride[kEp] +
         (c.dp / l.ep) * g.stride[kEdp] + c.pp * g.stride[kPp];
}

int group_size(const Layout& l, Group g) {
  const Grid grid = grid_of(l);
  int64_t n = 1;
  for (Axis a : group_axes(g)) n *= grid.size[a];
  return static_cast<int>(n);
}

int rank_in_group(const Layout& l, int64_t rank, Group g) {
  assert_rank(l, rank);
  const Grid grid = grid_of(l);
  const auto c = grid_coords(grid, rank);
  int64_t index = 0, radix = 1;
  for (Axis a : group_axes(g)) {
    index += c[a] * radix;
    radix *= grid.size[a];
  }
  return static_cast<int>(index);
}

std::vector<int64_t> group_ranks(const Layout& l, int64_t rank, Group g) {
  assert_rank(l, rank);
  const Grid grid = grid_of(l);
  const auto c = grid_coords(grid, rank);
  int64_t base = rank;
  for (Axis a : group_axes(g)) base -= c[a] * grid.stride[a];
  // Expand axis by axis, so the first axis varies fastest.
  std::vector<int64_t> members{base};
  for (Axis a : group_axes(g)) {
    std::vector<int64_t> next;
    next.reserve(members.size() * static_cast<size_t>(grid.size[a]));
    for (int64_t k = 0; k < grid.size[a]; ++k)
      for (int64_t m : members) next.push_back(m + k * grid.stride[a]);
    members = std::move(next);
  }
  return members;
}

DeviceLocation device_of(const Cluster& c, int64_t rank) {
  assert(rank >= 0 && rank < c.world());
  return {static_cast<int>(rank / c.devices_per_node), static_cast<int>(rank % c.devices_per_node)};
}

namespace {

// A group as ranks base + Σ k_i·stride_i (0 ≤ k_i < size_i) over its axes of more than one member,
// by increasing stride. The grid is mixed-radix, so stride_{i+1} ≥ stride_i·size_i: counting
// k in that order (k_0 fastest) visits the members in increasing rank. Axes adjacent in the rank
// order (stride_{i+1} = stride_i·size_i) merge into one.
struct Progressions {
  struct Step {
    int64_t stride = 1, size = 1;
  };
  int64_t base = 0;
  std::array<Step, 3> axes{};  // dp_cp, the widest group, has three
  size_t count = 0;

  int64_t last() const {
    int64_t r = base;
    for (size_t i = 0; i < count; ++i) r += (axes[i].size - 1) * axes[i].stride;
    return r;
  }
};

Progressions progressions(const Layout& l, int64_t rank, Group g) {
  const Grid grid = grid_of(l);
  const auto c = grid_coords(grid, rank);
  Progressions p;
  p.base = rank;
  for (Axis a : group_axes(g)) {
    p.base -= c[a] * grid.stride[a];
    if (grid.size[a] == 1) continue;
    size_t i = p.count++;  // insertion by stride
    for (; i > 0 && p.axes[i - 1].stride > grid.stride[a]; --i) p.axes[i] = p.axes[i - 1];
    p.axes[i] = {grid.stride[a], grid.size[a]};
  }
  size_t kept = 0;
  for (size_t i = 0; i < p.count; ++i) {
    if (kept > 0 && p.axes[i].stride == p.axes[kept - 1].stride * p.axes[kept - 1].size)
      p.axes[kept - 1].size *= p.axes[i].size;
    else
      p.axes[kept++] = p.axes[i];
  }
  p.count = kept;
  return p;
}

struct NodeCount {
  int nodes = 0;
  int max_per_node = 0;
};

// Members base + k·stride (0 ≤ k < size) on nodes of d devices, with stride < d. No node between
// the first and the last is skipped (a step is shorter than a node). Node q holds the k with
// q·d ≤ base + k·stride < (q+1)·d; the inner nodes' counts repeat with the offset
// (q·d − base) mod stride, every stride / gcd(stride, d) ≤ stride nodes, so the first and last node
// and at most `stride` inner ones decide the maximum.
NodeCount count_dense_progression(int64_t base, int64_t stride, int64_t size, int64_t d) {
  const int64_t last = base + (size - 1) * stride;
  const int64_t first_node = base / d, last_node = last / d;
  const auto members_on = [&](int64_t q) {
    const int64_t lo = std::max(base, q * d), hi = std::min(last, q * d + d - 1);
    const int64_t k_lo = (lo - base + stride - 1) / stride, k_hi = (hi - base) / stride;
    return static_cast<int>(k_hi - k_lo + 1);
  };
  NodeCount n{static_cast<int>(last_node - first_node + 1),
              std::max(members_on(first_node), members_on(last_node))};
  const int64_t inner_end = std::min(last_node, first_node + 1 + stride);
  for (int64_t q = first_node + 1; q < inner_end; ++q)
    n.max_per_node = std::max(n.max_per_node, members_on(q));
  return n;
}

// Any group: walk its members in increasing rank and count the runs on one node.
NodeCount count_by_walking(const Progressions& p, int64_t d) {
  NodeCount n;
  std::array<int64_t, 3> k{};
  int64_t rank = p.base, node = -1;
  int run = 0;
  for (;;) {
    if (rank / d != node) {
      node = rank / d;
      ++n.nodes;
      run = 0;
    }
    n.max_per_node = std::max(n.max_per_node, ++run);
    size_t i = 0;  // next member: increment the mixed-radix counter
    for (; i < p.count && ++k[i] == p.axes[i].size; ++i) {
      rank -= (p.axes[i].size - 1) * p.axes[i].stride;
      k[i] = 0;
    }
    if (i == p.count) return n;
    rank += p.axes[i].stride;
  }
}

// The devices of `rank`'s node whose group of kind g leaves the node. A group's members lie
// between its lowest and its highest, `extent` apart in every group of the kind: where that is a
// node or more, every group leaves its node; otherwise each of the node's groups is looked at.
int devices_leaving_node(const Layout& l, int64_t rank, Group g, int64_t extent, int64_t d) {
  if (extent >= d) return static_cast<int>(d);
  int leaving = 0;
  for (int64_t q = rank / d * d; q < rank / d * d + d; ++q) {
    const int64_t base = progressions(l, q, g).base;
    leaving += base / d != (base + extent) / d ? 1 : 0;
  }
  return leaving;
}

}  // namespace

GroupSpan group_span(const Cluster& c, const Layout& l, int64_t rank, Group g) {
  assert(c.world() == l.world() && "validate_layout checks the layout fills the cluster");
  assert_rank(l, rank);
  const Progressions p = progressions(l, rank, g);
  const int64_t last = p.last();
  const int64_t d = c.devices_per_node;
  GroupSpan s;
  s.group = g;
  s.size = group_size(l, g);
  // Domains are runs of consecutive devices, so the lowest and highest member decide the level.
  s.level = level_joining(c, p.base, last);
  NodeCount n;
  if (p.base / d == last / d)
    n = {1, s.size};
  else if (p.count == 1 && p.axes[0].stride >= d)
    n = {s.size, 1};  // every member a node or more from the next
  else if (p.count == 1)
    n = count_dense_progression(p.base, p.axes[0].stride, p.axes[0].size, d);
  else
    n = count_by_walking(p, d);
  s.nodes = n.nodes;
  s.max_ranks_per_node = n.max_per_node;
  s.nic_sharers = s.max_ranks_per_node;
  if (s.nodes > 1)
    s.nic_sharers = std::max(s.nic_sharers, devices_leaving_node(l, rank, g, last - p.base, d));
  return s;
}

// Any member list (a subset of a group, such as the first and last pipeline stage): by sorting
// the members' nodes. group_span above is the allocation-free form for whole groups.
GroupSpan ranks_span(const Cluster& c, Group g, std::span<const int64_t> members) {
  assert(!members.empty());
  GroupSpan s;
  s.group = g;
  s.size = static_cast<int>(members.size());
  // Domains are runs of consecutive devices, so the lowest and highest member decide the level.
  const auto [lo, hi] = std::minmax_element(members.begin(), members.end());
  s.level = level_joining(c, *lo, *hi);
  std::vector<int64_t> nodes(members.size());
  std::transform(members.begin(), members.end(), nodes.begin(),
                 [&](int64_t r) { return r / c.devices_per_node; });
  std::sort(nodes.begin(), nodes.end());
  s.nodes = 0;
  s.max_ranks_per_node = 0;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j < nodes.size() && nodes[j] == nodes[i]) ++j;
    ++s.nodes;
    s.max_ranks_per_node = std::max(s.max_ranks_per_node, static_cast<int>(j - i));
    i = j;
  }
  s.nic_sharers = s.max_ranks_per_node;
  return s;
}

GroupSpan pipeline_pair_span(const Cluster& c, const Layout& l, int64_t a, int64_t b) {
  const std::array<int64_t, 2> pair{a, b};
  GroupSpan s = ranks_span(c, Group::pp, pair);
  if (s.nodes == 1) return s;
  // Every rank q of a's node sends to q + (b − a) at about the same time (each stage sends each
  // micro-batch); those whose peer is on another node share the NICs.
  const int64_t d = c.devices_per_node, delta = b - a, first = a / d * d;
  int leaving = 0;
  for (int64_t q = first; q < first + d; ++q)
    leaving += q + delta >= 0 && q + delta < l.world() && (q + delta) / d != q / d ? 1 : 0;
  s.nic_sharers = std::max(s.nic_sharers, leaving);
  return s;
}

void validate_rank_order(std::string_view order, const std::string& source) {
  AxisOrder axes{};
  const std::string problem = parse_rank_order(order, axes);
  if (!problem.empty())
    throw InputError(
        source, "layout.rank_order",
        fmt::format("\"{}\" is not a permutation of tp, cp, ep, dp, pp: {}", order, problem),
        fmt::format("fastest-varying first, e.g. {} (Megatron-LM's default)", kDefaultRankOrder));
}

}  // namespace shardplan
