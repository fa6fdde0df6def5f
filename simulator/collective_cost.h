// Time of one collective (or a point-to-point transfer) on the interconnect level its group spans:
// the alpha-beta model with the algorithm NCCL would pick (ring, tree, hierarchical), NICs shared
// by the group members of a node, and fabric oversubscription. Bus bandwidth as nccl-tests
// defines it (doc/PERFORMANCE.md of nccl-tests).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/cluster.h"
#include "core/enum_names.h"
#include "core/placement.h"

namespace shardplan {

enum class Collective { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv };
inline constexpr EnumNames<Collective, 6> kCollectiveNames{{{Collective::all_reduce, "all_reduce"},
                                                            {Collective::reduce_scatter, "reduce_scatter"},
                                                            {Collective::all_gather, "all_gather"},
                                                            {Collective::all_to_all, "all_to_all"},
                                                            {Collective::broadcast, "broadcast"},
                                                            {Collective::send_recv, "send_recv"}}};

enum class Algorithm { ring, tree, hierarchical, direct };
inline constexpr EnumNames<Algorithm, 4> kAlgorithmNames{{{Algorithm::ring, "ring"},
                                                          {Algorithm::tree, "tree"},
                                                          {Algorithm::hierarchical, "hierarchical"},
                                                          {Algorithm::direct, "direct"}}};

struct CollectiveCost {
  double time_s = 0;
  double algbw_GBps = 0;  // bytes / time, as nccl-tests' algbw
  double busbw_GBps = 0;  // algbw × bus_bandwidth_factor
  Algorithm algorithm = Algorithm::ring;
  size_t level = 0;       // interconnect level whose links bound the time
};

// nccl-tests' busbw factor: 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter, all-gather and
// all-to-all, 1 for broadcast and send/recv.
double bus_bandwidth_factor(Collective c, int n);

// `bytes` is nccl-tests' "size": the full buffer of one rank (for reduce-scatter the input, for
// all-gather the output). A group of one costs nothing.
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span);

}  // namespace shardplan
