// Time of one collective (or a point-to-point transfer) on the interconnect level its group spans:
// the alpha-beta model with the algorithm NCCL would pick (ring or tree; hierarchical when asked),
// NICs shared by the devices of a node, and fabric oversubscription. Bus bandwidth as nccl-tests
// defines it (doc/PERFORMANCE.md of nccl-tests). With a calibration profile, a collective it
// measured on the same level and group size takes the profile's alpha-beta fit instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/cluster.h"
#include "core/collective.h"
#include "core/enum_names.h"
#include "core/placement.h"
#include "core/profile.h"

namespace shardplan {

enum class Algorithm { ring, tree, hierarchical, direct };
inline constexpr EnumNames<Algorithm, 4> kAlgorithmNames{{{Algorithm::ring, "ring"},
                                                          {Algorithm::tree, "tree"},
                                                          {Algorithm::hierarchical, "hierarchical"},
                                                          {Algorithm::direct, "direct"}}};

// Achieved fraction of a scale-up link's one-direction rate at large sizes. nccl-tests
// all_reduce_perf on one DGX H100 (8× H100 SXM5, NVLink4 at 450 GB/s per direction) reaches a
// busbw of ~365 GB/s with ring (NVIDIA's published nccl-tests results: 360–370 GB/s without NVLink
// SHARP): 365 / 450 = 0.81. (DGX A100, NVLink3 at 300 GB/s: ~230 GB/s, 0.77.) Applied to PCIe and
// shared memory too, for want of a published NCCL figure on them.
inline constexpr double kNcclScaleUpEfficiency = 0.81;
// Achieved fraction of the NICs' line rate across nodes: NCCL's inter-node busbw on DGX SuperPOD
// (8× 400 Gb/s NDR per DGX H100 node) is ~90% of the node's 400 GB/s (NVIDIA's DGX SuperPOD
// reference results, the figure the cost-model issue cites). Applied to RoCE as to InfiniBand:
// NCCL drives both through the same verbs transport.
inline constexpr double kNcclScaleOutEfficiency = 0.90;
// NCCL's fixed cost per call (kernel launch and set-up), on top of the per-hop latencies: NCCL's
// own tuning model starts every ring and tree time from baseLat, 6.6 us for ring with the LL
// protocol (src/graph/tuning.cc, baseLat[RING][LL]; 6.8 for tree), the protocol NCCL runs at
// latency-bound sizes. The levels' latency_us are NCCL's per-hop figures (hwLat in the same file)
// and serve as alpha unchanged.
inline constexpr double kNcclBaseLatency_us = 6.6;

struct CollectiveCost {
  double time_s = 0;
  double algbw_GBps = 0;  // bytes / time, as nccl-tests' algbw
  double busbw_GBps = 0;  // algbw × bus_bandwidth_factor
  Algorithm algorithm = Algorithm::ring;
  size_t level = 0;           // interconnect level whose links bound the time
  bool from_profile = false;  // time from the profile's fit (algorithm: what NCCL would pick)
};

// What the group's span alone does not say.
struct CollectiveOptions {
  // Devices of a node whose traffic crosses the node's NICs at the same time. 0: the group's own
  // members there (GroupSpan::max_ranks_per_node), as when nccl-tests runs one group. When every
  // group of a kind communicates at once (SPMD training: all dp groups reduce together, all pp
  // stages send together), pass the devices of a node doing so, usually Cluster::devices_per_node.
  // It matters where a node has fewer NICs than devices, or its fabric is oversubscribed.
  int nic_sharing_devices = 0;
  // Forces the all-reduce algorithm, as NCCL_ALGO does, where it applies to the span (tree and
  // hierarchical need a group spanning nodes, hierarchical the same members on every node);
  // elsewhere, and unset, the algorithm NCCL picks. Hierarchical is not one NCCL picks by itself:
  // it is the reduce-scatter / all-reduce / all-gather composition some frameworks run.
  std::optional<Algorithm> all_reduce_algorithm;
  // Measurements to price with (ExecutionOptions::profile; the cluster carries its apply_profile
  // overlay). A fit for this collective on span.level over span.size ranks gives the time as
  // alpha + bytes·beta, unless all_reduce_algorithm forces an algorithm on an all-reduce. Without
  // one the analytical model runs, and on the levels the profile measured (a send_recv fit) takes
  // their bandwidth as achieved: no NCCL efficiency factor on top.
  const Profile* profile = nullptr;
  // The input was last written long before the call (reads_cold_input, core/schedule.h): priced
  // with the profile's cold-input fit, or its other fit where it measured none.
  bool cold_input = false;
};

// `bytes` is nccl-tests' "size": the full buffer of one rank (for reduce-scatter the input, for
// all-gather the output, for all-to-all the send buffer). A group of one costs nothing. For
// send_recv, `span` is the level joining the two ranks; the cost is one transfer whatever its size.
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span);
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span, const CollectiveOptions& options);

}  // namespace shardplan
