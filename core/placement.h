// Rank placement: the world viewed as one grid (tp × cp × ep × dp/ep × pp in the layout's rank
// order, fastest-varying first), every parallel group a slice of it, and rank r on device r
// (node r / devices_per_node). For each group, which interconnect level it spans.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/enum_names.h"
#include "core/layout.h"

namespace shardplan {

// Parallel groups of a rank.
//   dp        : every replica of the dense weights (the ep and dp/ep axes together)
//   expert_dp : replicas of the expert weights (the dp/ep axis only)
//   dp_cp     : dp × cp, over which dense gradients are reduced when cp > 1 (Megatron-Core)
enum class Group { tp, cp, ep, dp, expert_dp, dp_cp, pp };
inline constexpr EnumNames<Group, 7> kGroupNames{{{Group::tp, "tp"},
                                                  {Group::cp, "cp"},
                                                  {Group::ep, "ep"},
                                                  {Group::dp, "dp"},
                                                  {Group::expert_dp, "expert_dp"},
                                                  {Group::dp_cp, "dp_cp"},
                                                  {Group::pp, "pp"}}};

// The replicas of the dense weights, over which their gradients are reduced and ZeRO shards them:
// dp, or dp_cp when cp > 1 (Megatron-Core's data-parallel group with context parallelism).
inline Group dense_dp_group(const Layout& l) {
  return l.cp > 1 ? Group::dp_cp : Group::dp;
}

// A rank's index along each axis; dp is the full data-parallel index (ep + ep_size · edp).
struct RankCoord {
  int tp = 0, cp = 0, ep = 0, dp = 0, pp = 0;

  bool operator==(const RankCoord&) const = default;
};

RankCoord rank_coord(const Layout& l, int64_t rank);
int64_t rank_of(const Layout& l, const RankCoord& c);

// Ranks of `rank`'s group of kind g, in increasing coordinate order (the group's own rank order).
// dp members go by the dp coordinate; dp_cp members by (dp, cp) with cp varying fastest, the
// order Megatron-Core's default rank order gives them.
std::vector<int64_t> group_ranks(const Layout& l, int64_t rank, Group g);

// Members of every group of kind g (tp for tp, dp for dp, dp·cp for dp_cp, dp/ep for expert_dp).
int group_size(const Layout& l, Group g);
// `rank`'s position in group_ranks(l, rank, g), in O(1).
int rank_in_group(const Layout& l, int64_t rank, Group g);

struct DeviceLocation {
  int node = 0;
  int device = 0;  // within the node
};
DeviceLocation device_of(const Cluster& c, int64_t rank);

// Where one group sits on the topology.
struct GroupSpan {
  Group group = Group::tp;
  int size = 1;                // ranks in the group
  size_t level = 0;            // innermost interconnect level whose domain holds the whole group
  int nodes = 1;               // nodes the group touches
  int max_ranks_per_node = 1;  // most group members on one node (they share that node's NICs)
  // Devices of a member's node whose traffic crosses the node's NICs at once when every rank runs
  // the step's program (SPMD): all groups of a kind communicate together, so a group spanning
  // nodes shares its node's NICs with the node's other groups of the kind. At least
  // max_ranks_per_node.
  int nic_sharers = 1;

  bool operator==(const GroupSpan&) const = default;
};

// `rank`'s group of kind g. Where it spans nodes, nic_sharers counts the devices of its node
// whose own group of the kind leaves the node too (all of them unless a group spans fewer ranks
// than a node holds).
GroupSpan group_span(const Cluster& c, const Layout& l, int64_t rank, Group g);
// The same for some ranks of a group of kind g, as they sit, with no other traffic beside them
// (nic_sharers = max_ranks_per_node): what a measurement of that group alone ran.
GroupSpan ranks_span(const Cluster& c, Group g, std::span<const int64_t> ranks);
// Two ranks of a pipeline: a transfer's ends, or the first and last stages that reduce a tied
// embedding. Where they are on different nodes, nic_sharers counts the ranks q of a's node whose
// own transfer the same way, to q + (b − a), leaves the node: every stage sends each micro-batch.
GroupSpan pipeline_pair_span(const Cluster& c, const Layout& l, int64_t a, int64_t b);

// Throws InputError (source, "layout.rank_order") unless the order is a permutation of
// tp, cp, ep, dp, pp joined by '-'.
void validate_rank_order(std::string_view order, const std::string& source);

}  // namespace shardplan
