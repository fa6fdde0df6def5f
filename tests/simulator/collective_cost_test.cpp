// Collective cost: busbw factors as nccl-tests defines them, and the alpha-beta times of ring,
// tree, hierarchical and direct algorithms on DGX-like nodes, every expected number worked out by
// hand.
#include "simulator/collective_cost.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace shardplan {
namespace {

constexpr double kGB = 1e9;

// DGX-like nodes of 8 GPUs: NVLink at `nvlink_GBps` per GPU, `nics` NICs of `nic_GBps` per node.
// Latencies round for hand arithmetic: an LL ring hop of 1 us on NVLink, 3 us on InfiniBand. The
// device is arch none (no GPU NCCL tunes for): Simple protocol only and no launch cost, so every
// call pays NCCL's ring Simple base latency, 8.4 us, and a ring Simple hop keeps NCCL's ratio to
// the LL one (simulator/nccl_tuning.cpp: 3.4 / 0.6 on NVLink, 14 / 2.7 on the network).
Cluster dgx(int nodes, double nvlink_GBps, double nic_GBps, int nics = 8,
            double oversubscription = 1) {
  Cluster c;
  c.name = "dgx-like";
  c.nodes = nodes;
  c.devices_per_node = 8;
  c.levels = {{.name = "nvlink",
               .kind = LinkKind::nvlink,
               .span_devices = 8,
               .bandwidth_GBps = nvlink_GBps,
               .latency_us = 1.0},
              {.name = "infiniband",
               .kind = LinkKind::infiniband,
               .span_devices = 0,
               .nics_per_node = nics,
               .nic_GBps = nic_GBps,
               .latency_us = 3.0,
               .oversubscription = oversubscription}};
  return c;
}
// DGX H100: NVLink4 450 GB/s per GPU per direction, 8× ConnectX-7 NDR (400 Gb/s = 50 GB/s).
Cluster dgx_h100(int nodes) {
  return dgx(nodes, 450, 50);
}
// DGX A100: NVLink3 300 GB/s per GPU per direction, 8× ConnectX-6 HDR (200 Gb/s = 25 GB/s).
Cluster dgx_a100(int nodes) {
  return dgx(nodes, 300, 25);
}

// Effective bandwidths the expected numbers use (efficiencies from collective_cost.h):
//   H100 NVLink 450 × 0.81 = 364.5 GB/s per GPU; IB 8 × 50 × 0.9 = 360 GB/s per node
//   A100 NVLink 300 × 0.81 = 243 GB/s per GPU;   IB 8 × 25 × 0.9 = 180 GB/s per node
constexpr double kH100Nvlink = 450 * kNcclScaleUpEfficiency * kGB;
constexpr double kH100Node = 8 * 50 * kNcclScaleOutEfficiency * kGB;
constexpr double kH100Nic = 50 * kNcclScaleOutEfficiency * kGB;  // one GPU's NIC: 45 GB/s
constexpr double kA100Nvlink = 300 * kNcclScaleUpEfficiency * kGB;
constexpr double kA100Node = 8 * 25 * kNcclScaleOutEfficiency * kGB;
constexpr double kNvlinkAlpha = 1e-6 * 3.4 / 0.6;  // 5.67 us
constexpr double kIbAlpha = 3e-6 * 14 / 2.7;        // 15.6 us
constexpr double kBase = 8.4e-6;
// A tree Simple hop: 28 / 0.6 of the LL ring hop on NVLink, 28 / 2.7 on the network.
constexpr double kNvlinkTreeHop = 1e-6 * 28 / 0.6;
constexpr double kIbTreeHop = 3e-6 * 28 / 2.7;
// NCCL's multi-node ring Simple all-reduce latency factor past 64 bytes per channel and rank.
constexpr double kPlateau = 1.4;
constexpr int64_t kOneGB = 1'000'000'000;
constexpr int64_t kHuge = int64_t{1} << 36;  // 68.7 GB: latency below 0.1% of the time

GroupSpan span(int size, size_t level, int nodes, int per_node) {
  GroupSpan s;
  s.size = size;
  s.level = level;
  s.nodes = nodes;
  s.max_ranks_per_node = per_node;
  return s;
}
GroupSpan one_node(int size) {
  return span(size, 0, 1, size);
}

TEST_CASE("busbw factors are nccl-tests' (doc/PERFORMANCE.md)", "[collective]") {
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 8) == Approx(2.0 * 7 / 8));
  CHECK(bus_bandwidth_factor(Collective::reduce_scatter, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(Collective::all_gather, 16) == Approx(15.0 / 16));
  CHECK(bus_bandwidth_factor(Collective::all_to_all, 4) == Approx(3.0 / 4));
  CHECK(bus_bandwidth_factor(Collective::broadcast, 8) == 1.0);
  CHECK(bus_bandwidth_factor(Collective::send_recv, 2) == 1.0);
  CHECK(bus_bandwidth_factor(Collective::all_reduce, 1) == 0.0);
}

TEST_CASE("a group of one costs nothing", "[collective]") {
  CollectiveCost c = collective_cost(dgx_h100(1), Collective::all_reduce, kOneGB, one_node(1));
  CHECK(c.time_s == 0);
  CHECK(c.algbw_GBps == 0);
  CHECK(c.busbw_GBps == 0);
}

TEST_CASE("ring all-reduce of 1 GB over 8 GPUs on NVLink is the hand formula", "[collective]") {
  // T = base + 2(n−1)·alpha + 2(n−1)/n · bytes / bw = 6.6 us + 14 · 1 us + 1.75 · 1e9 / 364.5e9
  //   = 4.8217 ms
  CollectiveCost c = collective_cost(dgx_h100(1), Collective::all_reduce, kOneGB, one_node(8));
  double expected_s = kBase + 14 * kNvlinkAlpha + 1.75 * kOneGB / kH100Nvlink;
  CHECK(c.time_s == Approx(expected_s).epsilon(1e-12));
  CHECK(c.algorithm == Algorithm::ring);
  CHECK(c.level == 0);
  CHECK(c.algbw_GBps == Approx(kOneGB / expected_s / kGB).epsilon(1e-12));         // 207.68 GB/s
  CHECK(c.busbw_GBps == Approx(1.75 * kOneGB / expected_s / kGB).epsilon(1e-12));  // 363.44 GB/s
}

TEST_CASE("at large sizes busbw is the level's effective bandwidth, whatever n", "[collective]") {
  // The nccl-tests invariant: for ring all-reduce, reduce-scatter and all-gather busbw does not
  // depend on n. Inside a DGX H100 it is NVLink's 328.5 GB/s; across two, the slower of NVLink and
  // the node's IB 360 GB/s (with the fitted 0.73 NVLink efficiency, NVLink).
  Cluster h100 = dgx_h100(2);
  for (Collective coll :
       {Collective::all_reduce, Collective::reduce_scatter, Collective::all_gather}) {
    for (int n : {2, 4, 8}) {
      CollectiveCost c = collective_cost(h100, coll, kHuge, one_node(n));
      CHECK(c.busbw_GBps <= kH100Nvlink / kGB);
      CHECK(c.busbw_GBps == Approx(kH100Nvlink / kGB).epsilon(1e-3));
    }
    CollectiveCost across = collective_cost(h100, coll, kHuge, span(16, 1, 2, 8));
    CHECK(across.busbw_GBps == Approx(std::min(kH100Nvlink, kH100Node) / kGB).epsilon(1e-3));
  }
}

TEST_CASE("latency-bound messages cost NCCL's base latency and steps × alpha", "[collective]") {
  Cluster h100 = dgx_h100(8);
  // 8 bytes: the bandwidth term is ~1e-11 s. All-reduce over 8: the base and 2·7 steps of 1 us.
  CHECK(collective_cost(h100, Collective::all_reduce, 8, one_node(8)).time_s ==
        Approx(kBase + 14 * kNvlinkAlpha).epsilon(1e-5));
  CHECK(collective_cost(h100, Collective::reduce_scatter, 8, one_node(8)).time_s ==
        Approx(kBase + 7 * kNvlinkAlpha).epsilon(1e-5));
  CHECK(collective_cost(h100, Collective::all_gather, 8, one_node(8)).time_s ==
        Approx(kBase + 7 * kNvlinkAlpha).epsilon(1e-5));

  // 64 GPUs on 8 nodes. Ring (NCCL counts 2·nodes inter-node steps): 8.4 + 110·5.67 + 16·15.6
  // = 880 us. Tree (Simple, base 0): chain of 8 and 3 tree levels, 2·(7·46.7 + 3·31.1) = 840 us:
  // NCCL takes the tree.
  CollectiveCost small = collective_cost(h100, Collective::all_reduce, 8, span(64, 1, 8, 8));
  CHECK(small.algorithm == Algorithm::tree);
  CHECK(small.time_s == Approx(2 * (7 * kNvlinkTreeHop + 3 * kIbTreeHop)).epsilon(1e-5));
  // One GPU per node on 64 nodes: ring 8.4 + 126·15.6 us = 1969 us, tree 2·log2(64)·31.1 = 373 us.
  CollectiveCost sparse =
      collective_cost(dgx_h100(64), Collective::all_reduce, 8, span(64, 1, 64, 1));
  CHECK(sparse.algorithm == Algorithm::tree);
  CHECK(sparse.time_s == Approx(2 * 6 * kIbTreeHop).epsilon(1e-5));

  // At 16 GB the ring's 2·63/64 buffers per link beat the tree's 2 (and its 0.92): its latency
  // takes NCCL's plateau factor 1.4, and NVLink's 328.5 GB/s bounds it.
  CollectiveCost large =
      collective_cost(h100, Collective::all_reduce, 16 * kOneGB, span(64, 1, 8, 8));
  CHECK(large.algorithm == Algorithm::ring);
  CHECK(large.time_s == Approx(kPlateau * (kBase + 110 * kNvlinkAlpha + 16 * kIbAlpha) +
                               2.0 * 63 / 64 * 16 * kOneGB / kH100Nvlink)
                            .epsilon(1e-12));
}

TEST_CASE("tp=16 over two DGX nodes is bounded by InfiniBand", "[collective]") {
  // A ring over 16 GPUs leaves each node by one edge per channel, the channels spread over the
  // node's 8 NICs: per step the node sends one chunk through all 8 NICs, so busbw is the node's
  // IB (8 NICs), not one GPU's NIC. tp=16 against tp=8 at large sizes: busbw falls by NVLink's
  // per-GPU rate over the node's IB rate. The per-GPU view (each GPU through its own 50 GB/s NIC,
  // 8× slower) holds for a group of one GPU per node (next test case). (DGX H100 left this case
  // when NVLink's fitted efficiency, 0.73, put its 328.5 GB/s below the node's IB 360.)
  for (auto [cluster, nvlink, node] : {std::tuple{dgx_a100(2), kA100Nvlink, kA100Node}}) {
    CollectiveCost tp8 = collective_cost(cluster, Collective::all_reduce, kHuge, one_node(8));
    CollectiveCost tp16 =
        collective_cost(cluster, Collective::all_reduce, kHuge, span(16, 1, 2, 8));
    CHECK(tp8.level == 0);
    CHECK(tp16.level == 1);
    CHECK(tp16.algorithm == Algorithm::ring);
    // A100: 219 / 180 = 1.217.
    CHECK(tp8.busbw_GBps / tp16.busbw_GBps == Approx(nvlink / node).epsilon(1e-3));
  }
  // 1 GB on H100: ring 1.4·(8.4 + 26·5.67 + 4·15.6) us + 2·15/16 · 1e9 / 328.5e9 = 6.0129 ms
  // (NVLink-bound); the tree's 2·(7·46.7 + 31.1) us + 2 · 1e9 / (0.92 · 328.5e9) loses.
  CollectiveCost c =
      collective_cost(dgx_h100(2), Collective::all_reduce, kOneGB, span(16, 1, 2, 8));
  CHECK(c.time_s == Approx(kPlateau * (kBase + 26 * kNvlinkAlpha + 4 * kIbAlpha) +
                           1.875 * kOneGB / kH100Nvlink)
                        .epsilon(1e-12));
}

TEST_CASE("the node's NICs are shared by the devices using them", "[collective]") {
  Cluster h100 = dgx_h100(2);
  GroupSpan pair = span(2, 1, 2, 1);
  GroupSpan tp16 = span(16, 1, 2, 8);
  // 8 members per node share the node's 8 NICs, 1 NIC each. A lone member per node still has only
  // its own NIC (NCCL sends a GPU's traffic through its nearest NIC): 45 GB/s per member either
  // way. But a ring over 16 leaves each node from its 8 members through 8 NICs, a ring over 2 from
  // one member through one: all-reduce busbw 360 against 45 GB/s, 8× (the NICs per node).
  CHECK(collective_cost(h100, Collective::all_reduce, kHuge, tp16).busbw_GBps ==
        Approx(std::min(kH100Nvlink, kH100Node) / kGB).epsilon(1e-3));
  CHECK(collective_cost(h100, Collective::all_reduce, kHuge, pair).busbw_GBps ==
        Approx(kH100Nic / kGB).epsilon(1e-3));

  // Send/recv of 1 GB between nodes: 6.6 us + 3 us + 1e9 / 45e9 = 22.232 ms, alone or with the
  // node's 7 other GPUs sending at once (SPMD pipeline stages): each has its NIC.
  CollectiveOptions spmd;
  spmd.nic_sharing_devices = 8;
  CollectiveCost alone = collective_cost(h100, Collective::send_recv, kOneGB, pair);
  CHECK(alone.time_s == Approx(kBase + kIbAlpha + kOneGB / kH100Nic).epsilon(1e-12));
  CHECK(alone.algorithm == Algorithm::direct);
  CHECK(alone.level == 1);
  CHECK(collective_cost(h100, Collective::send_recv, kOneGB, pair, spmd).time_s == alone.time_s);
  // Nodes with 2 NICs for 8 GPUs: a lone pair has a whole NIC (45 GB/s), 8 pairs at once a quarter
  // each (2 · 45 / 8 = 11.25 GB/s): 6.6 us + 3 us + 1e9 / 11.25e9 = 88.898 ms, ~4× slower.
  Cluster two_nics = dgx(2, 450, 50, 2);
  CHECK(collective_cost(two_nics, Collective::send_recv, kOneGB, pair).time_s ==
        Approx(kBase + kIbAlpha + kOneGB / kH100Nic).epsilon(1e-12));
  CHECK(collective_cost(two_nics, Collective::send_recv, kOneGB, pair, spmd).time_s ==
        Approx(kBase + kIbAlpha + kOneGB / (2 * kH100Nic / 8)).epsilon(1e-12));

  // All-to-all sends each member's off-node chunks through its own NIC. 16 over 2 nodes, 1 GB:
  // 8 chunks of 62.5 MB leave each member at 45 GB/s (11.11 ms) while 7 go over NVLink (1.20 ms);
  // latency 6.6 + 15 · 3 us. 2 over 2 nodes: one 500 MB chunk at 45 GB/s, the same 11.11 ms.
  CollectiveCost a2a16 = collective_cost(h100, Collective::all_to_all, kOneGB, tp16);
  CollectiveCost a2a2 = collective_cost(h100, Collective::all_to_all, kOneGB, pair);
  CHECK(a2a16.time_s ==
        Approx(kBase + 15 * kIbAlpha + 8 * (kOneGB / 16.0) / kH100Nic).epsilon(1e-12));
  CHECK(a2a16.level == 1);
  CHECK(a2a2.time_s == Approx(kBase + kIbAlpha + (kOneGB / 2.0) / kH100Nic).epsilon(1e-12));
  // With scale-up links slower than the NIC (20 GB/s, 16.2 effective) the 7 on-node chunks bound
  // it instead: 6.6 us + 15 · 3 us + 7 · 62.5e6 / 16.2e9 = 27.06 ms.
  CollectiveCost slow = collective_cost(dgx(2, 20, 50), Collective::all_to_all, kOneGB, tp16);
  CHECK(slow.time_s ==
        Approx(kBase + 15 * kIbAlpha + 7 * (kOneGB / 16.0) / (20 * kNcclScaleUpEfficiency * kGB))
            .epsilon(1e-12));
  CHECK(slow.level == 0);
}

TEST_CASE("oversubscription 2 halves the inter-node bandwidth", "[collective]") {
  // A 2:1 fabric gives each of a node's 8 GPUs 400 / (8 · 2) = 25 GB/s of its 50 GB/s NIC.
  Cluster blocking = dgx(2, 450, 50, 8, 2.0);
  GroupSpan pair = span(2, 1, 2, 1);
  GroupSpan tp16 = span(16, 1, 2, 8);
  // tp=16, 1 GB: 1.4·(8.4 + 26·5.67 + 4·15.6) us + 2·15/16 · 1e9 / (360e9 / 2) = 10.722 ms.
  CHECK(collective_cost(blocking, Collective::all_reduce, kOneGB, tp16).time_s ==
        Approx(kPlateau * (kBase + 26 * kNvlinkAlpha + 4 * kIbAlpha) +
               1.875 * kOneGB / (kH100Node / 2))
            .epsilon(1e-12));
  CollectiveOptions spmd;
  spmd.nic_sharing_devices = 8;
  // Each case's fabric-bound rate at full subscription: the node's IB, and one NIC's share.
  for (auto [s, options, fabric] : {std::tuple{tp16, CollectiveOptions{}, kH100Node / kGB},
                                    std::tuple{pair, spmd, kH100Nic / kGB}}) {
    double full =
        collective_cost(dgx_h100(2), Collective::all_reduce, kHuge, s, options).busbw_GBps;
    double half = collective_cost(blocking, Collective::all_reduce, kHuge, s, options).busbw_GBps;
    // The fabric's rate halves (tp=16 at full rate is bounded by NVLink's 328.5 GB/s instead).
    CHECK(full <= fabric * (1 + 1e-3));
    CHECK(half == Approx(0.5 * fabric).epsilon(1e-3));
  }
  // One pair alone does not fill the fabric: its NIC's 45 GB/s.
  CHECK(collective_cost(blocking, Collective::all_reduce, kHuge, pair).busbw_GBps ==
        Approx(kH100Nic / kGB).epsilon(1e-3));
}

TEST_CASE("all-to-all, broadcast and send/recv inside a node", "[collective]") {
  Cluster h100 = dgx_h100(1);
  // All-to-all over 8, 1 GB: the base, 7 exchanges of 1 us, 7/8 of the buffer over NVLink:
  // 2.4141 ms.
  CollectiveCost a2a = collective_cost(h100, Collective::all_to_all, kOneGB, one_node(8));
  CHECK(a2a.time_s ==
        Approx(kBase + 7 * kNvlinkAlpha + 0.875 * kOneGB / kH100Nvlink).epsilon(1e-12));
  CHECK(a2a.algorithm == Algorithm::direct);
  CHECK(a2a.busbw_GBps == Approx(0.875 * kOneGB / a2a.time_s / kGB).epsilon(1e-12));
  // Broadcast over 8 is a pipelined chain: the base, 7 hops of latency, the buffer once: 2.7571 ms.
  CollectiveCost bcast = collective_cost(h100, Collective::broadcast, kOneGB, one_node(8));
  CHECK(bcast.time_s == Approx(kBase + 7 * kNvlinkAlpha + kOneGB / kH100Nvlink).epsilon(1e-12));
  CHECK(bcast.busbw_GBps == Approx(bcast.algbw_GBps));
  // Send/recv between two GPUs of a node: 6.6 us + 1 us + 1e9 / 364.5e9 = 2.7511 ms.
  CollectiveCost p2p = collective_cost(h100, Collective::send_recv, kOneGB, one_node(2));
  CHECK(p2p.time_s == Approx(kBase + kNvlinkAlpha + kOneGB / kH100Nvlink).epsilon(1e-12));
  CHECK(p2p.level == 0);
}

TEST_CASE("hierarchical all-reduce, when forced, on a node with one slow NIC", "[collective]") {
  // 2 nodes of 8 GPUs with one 25 GB/s NIC each: 22.5 GB/s per node, 2.8125 GB/s per member when
  // all 8 use it.
  Cluster thin = dgx(2, 450, 25, 1);
  GroupSpan tp16 = span(16, 1, 2, 8);
  // NCCL's pick, the ring: 1.4·(8.4 + 26·5.67 + 4·15.6) us + 2·15/16 · 1e9 / 22.5e9 = 83.638 ms.
  CollectiveCost nccl = collective_cost(thin, Collective::all_reduce, kOneGB, tp16);
  CHECK(nccl.algorithm == Algorithm::ring);
  CHECK(nccl.time_s ==
        Approx(kPlateau * (kBase + 26 * kNvlinkAlpha + 4 * kIbAlpha) + 1.875 * kOneGB / 22.5e9)
            .epsilon(1e-12));
  // Hierarchical, three calls: reduce-scatter over NVLink, 6.6 us + 7·1 us + 7/8 · 1e9 / 364.5e9
  // = 2.4141 ms; ring all-reduce of the 125 MB shards over 2 nodes, 6.6 us + 2·3 us + 2·1/2 ·
  // 125e6 / 2.8125e9 = 44.457 ms; all-gather as the reduce-scatter. 49.285 ms, bounded by
  // InfiniBand: it sends 1 buffer per node across where the ring sends 1.875.
  CollectiveOptions forced;
  forced.all_reduce_algorithm = Algorithm::hierarchical;
  CollectiveCost hier = collective_cost(thin, Collective::all_reduce, kOneGB, tp16, forced);
  double rs_s = kBase + 7 * kNvlinkAlpha + 0.875 * kOneGB / kH100Nvlink;
  double across_s = kPlateau * (kBase + 2 * kIbAlpha) + (kOneGB / 8.0) / 2.8125e9;
  CHECK(hier.algorithm == Algorithm::hierarchical);
  CHECK(hier.time_s == Approx(2 * rs_s + across_s).epsilon(1e-12));
  CHECK(hier.level == 1);
  // Forcing the tree inside one node, where NCCL has no tree, leaves NCCL's pick.
  forced.all_reduce_algorithm = Algorithm::tree;
  CHECK(collective_cost(thin, Collective::all_reduce, kOneGB, one_node(8), forced).algorithm ==
        Algorithm::ring);
}

}  // namespace
}  // namespace shardplan
