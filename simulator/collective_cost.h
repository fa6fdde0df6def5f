// Time of one collective (or a point-to-point transfer) on the interconnect level its group spans:
// NCCL's own cost model, latency + bytes / algBw for every algorithm (ring, tree, NVLS;
// hierarchical when asked) and protocol (LL, LL128, Simple), the least as NCCL picks it,
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
#include "simulator/nccl_tuning.h"

namespace shardplan {

enum class Algorithm { ring, tree, nvls, hierarchical, direct };
inline constexpr EnumNames<Algorithm, 5> kAlgorithmNames{{{Algorithm::ring, "ring"},
                                                          {Algorithm::tree, "tree"},
                                                          {Algorithm::nvls, "nvls"},
                                                          {Algorithm::hierarchical, "hierarchical"},
                                                          {Algorithm::direct, "direct"}}};

// What NCCL's tuning tables (simulator/nccl_tuning.h) do not say: physical parameters fitted on
// measured collectives. Refit them with
//     build/tests/test_simulator '[nccl-fit]' -s
// which reads data/fidelity/vtrain_allreduce_a100.json, searches both by least mean of the
// per-size-band MAPE, and prints them with the error per GPU count and size band.
//
// Achieved fraction of a scale-up level's datasheet rate (one direction) as NCCL's busBw: NCCL's
// own model takes 20 GB/s per 25 GB/s NVLink link (src/graph/topo.h SM80_NVLINK_BW, 0.80; SM90
// 20.6, 0.82); nccl-tests on 2-8 A100 (vTrain's tables) fit 0.73: 219 GB/s busbw of NVLink3's 300
// (229 GB/s measured at 1 GiB on 8 GPUs, 197 on 2). Defensible range 0.65-0.85.
inline constexpr double kNcclScaleUpEfficiency = 0.73;
// Achieved fraction of the NICs' line rate across nodes: NCCL's inter-node busbw on DGX SuperPOD
// (8× 400 Gb/s NDR per DGX H100 node) is ~90% of the node's 400 GB/s (NVIDIA's DGX SuperPOD
// reference results); the Ultra-Scale Playbook's all-reduce on 2 nodes of 8 H100 over EFA
// measured 361.7 GB/s busbw of 400 (0.90; data/fidelity/ultrascale_dev.json). Not refitted:
// the one-node table has no network. Applied to RoCE as to InfiniBand (the same verbs transport).
inline constexpr double kNcclScaleOutEfficiency = 0.90;
// Cost of one NCCL call beyond NCCL's own latency model (kernel launch, the proxy thread's
// set-up, the end-of-call barrier), us: fitted 25 on vTrain's tables, where a 1 MiB all-reduce
// on 8 A100 takes 92.8 us against NCCL's modelled 48. Defensible range 5-40 us. Paid by every call
// on a GPU NCCL tunes for; none on arch none (MPI over CPU cores).
inline constexpr double kNcclLaunch_us = 25;

// The fitted parameters as one value, so that a refit can price with candidates.
struct NcclPhysics {
  double scale_up_efficiency = kNcclScaleUpEfficiency;
  double scale_out_efficiency = kNcclScaleOutEfficiency;
  double launch_us = kNcclLaunch_us;
};

struct CollectiveCost {
  double time_s = 0;
  double algbw_GBps = 0;  // bytes / time, as nccl-tests' algbw
  double busbw_GBps = 0;  // algbw × bus_bandwidth_factor
  Algorithm algorithm = Algorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;  // the protocol NCCL would run it with
  size_t level = 0;           // interconnect level whose links bound the time
  bool from_profile = false;  // time from the profile's fit (algorithm: what NCCL would pick)
};

// What the group's span alone does not say.
struct CollectiveOptions {
  // Devices of a node whose traffic crosses the node's NICs at the same time, beyond what the
  // span says. 0: the span's own (GroupSpan::nic_sharers: a training step's spans count the
  // node's other groups of the kind, ranks_span's only the group's members there, as when
  // nccl-tests runs one group). It matters where a node has fewer NICs than devices, or its
  // fabric is oversubscribed.
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
  // The fitted parameters to price with (a refit passes candidates).
  NcclPhysics physics;
};

// `bytes` is nccl-tests' "size": the full buffer of one rank (for reduce-scatter the input, for
// all-gather the output, for all-to-all the send buffer). A group of one costs nothing. For
// send_recv, `span` is the level joining the two ranks; the cost is one transfer whatever its size.
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span);
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span, const CollectiveOptions& options);

// SMs the call occupies while it runs: NCCL runs one CTA per channel, each resident on one SM for
// the whole call (src/enqueue.cc, src/include/device.h), so a GEMM overlapped with it has
// sm_count − nccl_channels SMs. The channels of the group's level (nccl_channels(level)), shed
// as NCCL sheds them for small buffers (src/enqueue.cc topoGetAlgoInfo: one channel fewer while
// bytes < channels × threads × threshold). 0 for a group of one.
int nccl_channels(const Cluster& cluster, Collective c, int64_t bytes, const GroupSpan& span);
// The same for a call already priced: `cost` is collective_cost's for these bytes and span.
int nccl_channels(const Cluster& cluster, const CollectiveCost& cost, int64_t bytes,
                  const GroupSpan& span);

}  // namespace shardplan
