#include "core/placement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/presets.h"
#include "tests/core/thrown_input_error.h"

using namespace shardplan;
using shardplan::testing::thrown_input_error;
using Ranks = std::vector<int64_t>;

namespace Catch {
template <>
struct StringMaker<GroupSpan> {
  static std::string convert(const GroupSpan& s) {
    return fmt::format("{{{}, size {}, level {}, {} nodes, {} per node, {} sharing its NICs}}",
                       enum_name(s.group, kGroupNames), s.size, s.level, s.nodes,
                       s.max_ranks_per_node, s.nic_sharers);
  }
};
template <>
struct StringMaker<RankCoord> {
  static std::string convert(const RankCoord& c) {
    return fmt::format("{{tp {}, cp {}, ep {}, dp {}, pp {}}}", c.tp, c.cp, c.ep, c.dp, c.pp);
  }
};
}  // namespace Catch

namespace {

Layout make_layout(int tp, int cp, int ep, int dp, int pp,
                   std::string order = std::string(kDefaultRankOrder)) {
  Layout l;
  l.tp = tp;
  l.cp = cp;
  l.ep = ep;
  l.dp = dp;
  l.pp = pp;
  l.rank_order = std::move(order);
  return l;
}

}  // namespace

// tp=2, cp=2, ep=2, dp=4, pp=2 in Megatron's order tp-cp-ep-dp-pp: the grid's strides are
// tp 1, cp 2, ep 4, dp/ep 8, pp 16 (32 ranks).
TEST_CASE("placement of a tp-cp-ep-dp-pp layout, by hand", "[placement]") {
  const Layout l = make_layout(2, 2, 2, 4, 2);
  REQUIRE(l.world() == 32);
  // 27 = 16·1 (pp) + 8·1 (dp/ep) + 4·0 (ep) + 2·1 (cp) + 1·1 (tp); dp = ep + 2·(dp/ep) = 2.
  CHECK(rank_coord(l, 27) == RankCoord{1, 1, 0, 2, 1});
  CHECK(rank_coord(l, 0) == RankCoord{0, 0, 0, 0, 0});
  CHECK(rank_coord(l, 4) == RankCoord{0, 0, 1, 1, 0});
  CHECK(rank_coord(l, 31) == RankCoord{1, 1, 1, 3, 1});
  CHECK(rank_of(l, RankCoord{1, 1, 0, 2, 1}) == 27);

  CHECK(group_ranks(l, 27, Group::tp) == Ranks{26, 27});
  CHECK(group_ranks(l, 27, Group::cp) == Ranks{25, 27});
  CHECK(group_ranks(l, 27, Group::ep) == Ranks{27, 31});
  CHECK(group_ranks(l, 27, Group::dp) == Ranks{19, 23, 27, 31});
  CHECK(group_ranks(l, 27, Group::expert_dp) == Ranks{19, 27});
  CHECK(group_ranks(l, 27, Group::dp_cp) == Ranks{17, 19, 21, 23, 25, 27, 29, 31});
  CHECK(group_ranks(l, 27, Group::pp) == Ranks{11, 27});

  CHECK(group_size(l, Group::dp) == 4);
  CHECK(group_size(l, Group::expert_dp) == 2);
  CHECK(group_size(l, Group::dp_cp) == 8);
  CHECK(rank_in_group(l, 27, Group::dp) == 2);
  CHECK(rank_in_group(l, 27, Group::dp_cp) == 5);
  CHECK(rank_in_group(l, 27, Group::pp) == 1);
}

TEST_CASE("every rank sits where its group lists it", "[placement]") {
  const Layout l = make_layout(2, 2, 2, 4, 2);
  for (int64_t r = 0; r < l.world(); ++r) {
    CHECK(rank_of(l, rank_coord(l, r)) == r);
    for (const auto& [g, name] : kGroupNames) {
      INFO("rank " << r << ", group " << name);
      const Ranks members = group_ranks(l, r, g);
      REQUIRE(members.size() == static_cast<size_t>(group_size(l, g)));
      CHECK(members[static_cast<size_t>(rank_in_group(l, r, g))] == r);
    }
  }
}

TEST_CASE("rank_of inverts rank_coord on 16,384 ranks", "[placement]") {
  const Layout l = make_layout(8, 2, 4, 128, 8);
  REQUIRE(l.world() == 16384);
  int64_t mismatches = 0;
  for (int64_t r = 0; r < l.world(); ++r) mismatches += rank_of(l, rank_coord(l, r)) != r;
  CHECK(mismatches == 0);
}

TEST_CASE("another rank order permutes the grid", "[placement]") {
  // pp-tp-cp-ep-dp: strides pp 1, tp 2, cp 4, ep 8, dp/ep 16.
  const Layout l = make_layout(2, 2, 2, 4, 2, "pp-tp-cp-ep-dp");
  CHECK(rank_of(l, RankCoord{1, 1, 0, 2, 1}) == 16 + 4 + 2 + 1);
  CHECK(rank_coord(l, 23) == RankCoord{1, 1, 0, 2, 1});
  CHECK(group_ranks(l, 23, Group::tp) == Ranks{21, 23});
  CHECK(group_ranks(l, 23, Group::pp) == Ranks{22, 23});
  CHECK(group_ranks(l, 23, Group::dp) == Ranks{7, 15, 23, 31});

  // dp/ep before ep (tp-cp-dp-ep-pp: strides tp 1, cp 2, dp/ep 4, ep 8, pp 16): the dp group is
  // listed by dp coordinate (ep + 2·(dp/ep)), which is no longer increasing rank.
  const Layout swapped = make_layout(2, 2, 2, 4, 2, "tp-cp-dp-ep-pp");
  CHECK(group_ranks(swapped, 0, Group::dp) == Ranks{0, 8, 4, 12});
  CHECK(group_ranks(swapped, 0, Group::ep) == Ranks{0, 8});
  CHECK(group_ranks(swapped, 0, Group::expert_dp) == Ranks{0, 4});
}

TEST_CASE("group spans on four DGX H100 nodes", "[placement]") {
  const Cluster c = load_cluster("dgx-h100", 4);
  REQUIRE(c.world() == 32);
  REQUIRE(c.levels[0].name == "nvlink");
  REQUIRE(c.levels[1].name == "infiniband");

  // GroupSpan{group, size, level, nodes, max_ranks_per_node, nic_sharers}
  const Layout tp8 = make_layout(8, 1, 1, 4, 1);
  CHECK(group_span(c, tp8, 13, Group::tp) == GroupSpan{Group::tp, 8, 0, 1, 8, 8});
  // One member per node, but the node's 8 dp groups reduce together through its NICs.
  CHECK(group_span(c, tp8, 13, Group::dp) == GroupSpan{Group::dp, 4, 1, 4, 1, 8});
  // tp=16 crosses nodes: InfiniBand, 8 members sharing each node's NICs.
  const Layout tp16 = make_layout(16, 1, 1, 2, 1);
  CHECK(group_span(c, tp16, 0, Group::tp) == GroupSpan{Group::tp, 16, 1, 2, 8, 8});
  // tp=4, pp=8 in the default order: a pipeline's stages sit 4 ranks apart, two per node.
  const Layout pp8 = make_layout(4, 1, 1, 1, 8);
  CHECK(group_span(c, pp8, 0, Group::pp) == GroupSpan{Group::pp, 8, 1, 4, 2, 8});
  // A transfer between stages 1 and 2 leaves node 0 from the 4 ranks of stage 1 there (the pp
  // stride), while stage 0's 4 send inside the node; a lone pair measured alone has one.
  CHECK(pipeline_pair_span(c, pp8, 5, 9) == GroupSpan{Group::pp, 2, 1, 2, 1, 4});
  CHECK(pipeline_pair_span(c, pp8, 1, 5) == GroupSpan{Group::pp, 2, 0, 1, 2, 2});
  const std::array<int64_t, 2> pair{5, 9};
  CHECK(ranks_span(c, Group::pp, pair) == GroupSpan{Group::pp, 2, 1, 2, 1, 1});
  // Stages of a node each (tp=8): all 8 ranks of a stage send to the next node at once.
  const Layout tp8pp4 = make_layout(8, 1, 1, 1, 4);
  CHECK(pipeline_pair_span(c, tp8pp4, 3, 11).nic_sharers == 8);

  CHECK(device_of(c, 13).node == 1);
  CHECK(device_of(c, 13).device == 5);
}

TEST_CASE("group spans of every rank of 16,384", "[placement]") {
  // 2,048 DGX H100 nodes, tp=8, pp=16, dp=128: tp stays on NVLink; pp and dp leave the node, one
  // member per node. Each call looks at its own group only, so this takes milliseconds.
  const Cluster c = load_cluster("dgx-h100", 2048);
  const Layout l = make_layout(8, 1, 1, 128, 16);
  REQUIRE(l.world() == c.world());
  int64_t tp_off_nvlink = 0, pp_wrong = 0;
  for (int64_t r = 0; r < l.world(); ++r) {
    tp_off_nvlink += group_span(c, l, r, Group::tp).level != 0;
    const GroupSpan pp = group_span(c, l, r, Group::pp);
    pp_wrong += pp.level != 1 || pp.nodes != 16 || pp.max_ranks_per_node != 1;
  }
  CHECK(tp_off_nvlink == 0);
  CHECK(pp_wrong == 0);
  const GroupSpan dp = group_span(c, l, 12345, Group::dp);
  CHECK(dp.size == 128);
  CHECK(dp.nodes == 128);
  CHECK(dp.max_ranks_per_node == 1);
}

namespace {

// group_span by its definition: list the members, sort their nodes, count.
int nodes_touched(const Cluster& c, const Layout& l, int64_t rank, Group g) {
  std::vector<int64_t> nodes;
  for (int64_t member : group_ranks(l, rank, g)) nodes.push_back(member / c.devices_per_node);
  std::sort(nodes.begin(), nodes.end());
  return static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

// With nic_sharers counted device by device: the devices of the rank's node whose own group of
// the kind leaves the node.
GroupSpan brute_force_span(const Cluster& c, const Layout& l, int64_t rank, Group g) {
  Ranks members = group_ranks(l, rank, g);
  std::sort(members.begin(), members.end());
  GroupSpan s;
  s.group = g;
  s.size = static_cast<int>(members.size());
  s.level = level_joining(c, members.front(), members.back());
  s.nodes = 0;
  s.max_ranks_per_node = 0;
  for (size_t i = 0; i < members.size();) {
    size_t j = i;
    while (j < members.size() && members[j] / c.devices_per_node == members[i] / c.devices_per_node)
      ++j;
    ++s.nodes;
    s.max_ranks_per_node = std::max(s.max_ranks_per_node, static_cast<int>(j - i));
    i = j;
  }
  s.nic_sharers = s.max_ranks_per_node;
  if (s.nodes > 1) {
    const int64_t first = rank / c.devices_per_node * c.devices_per_node;
    int crossing = 0;
    for (int64_t q = first; q < first + c.devices_per_node; ++q)
      crossing += nodes_touched(c, l, q, g) > 1 ? 1 : 0;
    s.nic_sharers = std::max(s.nic_sharers, crossing);
  }
  return s;
}

// `nodes` nodes of d devices: NVLink inside a node, a rack level over two nodes when there is an
// even number of them, InfiniBand over all.
Cluster cluster_of(int nodes, int d) {
  static const Cluster dgx = load_cluster("dgx-h100", 1);
  Cluster c = dgx;
  c.nodes = nodes;
  c.devices_per_node = d;
  c.levels[0].span_devices = d;
  if (nodes % 2 == 0) {
    InterconnectLevel rack = c.levels[0];
    rack.name = "rack";
    rack.span_devices = 2 * d;
    c.levels.insert(c.levels.begin() + 1, rack);
  }
  return c;
}

}  // namespace

TEST_CASE("group_span agrees with listing the members, for every rank order", "[placement]") {
  struct Sizes {
    int tp, cp, ep, dp, pp;
  };
  const Sizes layouts[] = {{2, 2, 2, 4, 2}, {3, 1, 1, 8, 2},  {1, 2, 2, 6, 3}, {3, 1, 1, 32, 1},
                           {2, 3, 1, 4, 1}, {1, 1, 1, 24, 2}, {4, 1, 2, 4, 3}, {1, 1, 1, 64, 1}};
  std::vector<std::string> axes{"cp", "dp", "ep", "pp", "tp"};  // sorted for next_permutation
  int64_t compared = 0, wrong = 0;
  do {
    const std::string order = fmt::format("{}", fmt::join(axes, "-"));
    for (const Sizes& z : layouts) {
      const Layout l = make_layout(z.tp, z.cp, z.ep, z.dp, z.pp, order);
      for (int d : {2, 3, 4, 6, 8}) {
        if (l.world() % d != 0) continue;
        const Cluster c = cluster_of(static_cast<int>(l.world() / d), d);
        for (int64_t rank = 0; rank < l.world(); rank += 5)
          for (const auto& [g, name] : kGroupNames) {
            const GroupSpan fast = group_span(c, l, rank, g),
                            slow = brute_force_span(c, l, rank, g);
            ++compared;
            if (fast == slow) continue;
            ++wrong;
            FAIL_CHECK(fmt::format("{} {}x{}x{}x{}x{} d={} rank {}", order, z.tp, z.cp, z.ep, z.dp,
                                   z.pp, d, rank)
                       << ": " << Catch::StringMaker<GroupSpan>::convert(fast) << " vs "
                       << Catch::StringMaker<GroupSpan>::convert(slow));
          }
      }
    }
  } while (std::next_permutation(axes.begin(), axes.end()));
  CHECK(compared > 100000);
  CHECK(wrong == 0);
}

TEST_CASE("rank_order must be a permutation of the five axes", "[placement]") {
  for (const char* good : {"tp-cp-ep-dp-pp", "pp-dp-ep-cp-tp", "tp-dp-pp-cp-ep"})
    CHECK_NOTHROW(validate_rank_order(good, "--layout"));
  for (const char* bad : {"tp-cp-dp-pp", "tp-tp-cp-ep-dp-pp", "tp-cp-ep-dp-xx", "",
                          "tp-cp-ep-dp-pp-", "tp,cp,ep,dp,pp"}) {
    INFO(bad);
    const InputError e = thrown_input_error([&] { validate_rank_order(bad, "--layout"); });
    CHECK(e.file == "--layout");
    CHECK(e.field == "layout.rank_order");
    CHECK_FALSE(e.hint.empty());
  }
}
