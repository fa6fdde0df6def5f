// NCCL's own tuning tables: the latency and bandwidth refinements NCCL's cost model applies per
// algorithm and protocol before it picks the fastest (NVIDIA/nccl v2.20.3, src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime). Every constant here is NCCL's, quoted from that file
// and version; what NCCL leaves to its topology search (links, channels) comes from the cluster,
// and what it does not model at all (achieved link fraction, launch cost) is fitted in
// collective_cost.h.
#pragma once

#include "core/cluster.h"
#include "core/enum_names.h"

namespace shardplan {

// NCCL_PROTO_LL (8-byte lines, half of them flags), NCCL_PROTO_LL128 (128-byte lines, 8 bytes of
// flag), NCCL_PROTO_SIMPLE (bulk copies with a fence per step).
enum class NcclProtocol { ll, ll128, simple };
inline constexpr EnumNames<NcclProtocol, 3> kNcclProtocolNames{
    {{NcclProtocol::ll, "LL"}, {NcclProtocol::ll128, "LL128"}, {NcclProtocol::simple, "Simple"}}};
inline constexpr NcclProtocol kNcclProtocols[] = {NcclProtocol::ll, NcclProtocol::ll128,
                                                  NcclProtocol::simple};

enum class NcclAlgorithm { tree, ring, nvls };

// The hwLat rows: which transport a hop takes.
enum class NcclHop { nvlink, pci, net };
NcclHop nccl_hop(LinkKind k);

// baseLat[algorithm][protocol], us: the fixed part of every call.
double nccl_base_latency_us(NcclAlgorithm a, NcclProtocol p);
// hwLat[hop][algorithm][protocol], us: one step over that transport.
double nccl_hop_latency_us(NcclHop h, NcclAlgorithm a, NcclProtocol p);

// The per-architecture bandwidth caps, GB/s, picked by the GPU generation and the node count
// (NCCL's N1 / N2 / N4+ columns).
struct NcclCaps {
  double ll_max_GBps = 0;                  // llMaxBws: LL on ring and tree, whole call
  double per_channel_ring_ll128_GBps = 0;  // perChMaxRingLL128Bws
  double per_channel_tree_ll128_GBps = 0;  // perChMaxTreeLL128Bws
  double per_channel_tree_GBps = 0;        // perChMaxTreeBws
};
NcclCaps nccl_caps(GpuArch arch, int nodes);

// Whether NCCL runs the protocol at all: LL128 only between GPUs of a generation it was validated
// on and over NVLink inside the node; LL and LL128 not at all where NCCL does not run (arch none:
// MPI over CPU cores, Simple-like bulk copies).
bool nccl_protocol_enabled(GpuArch arch, LinkKind inside_node, NcclProtocol p);

// treeCorrectionFactor: the tree's achieved fraction of its modelled bandwidth by size (powers of
// two from 64 B; 1 at and past 512 MiB).
double nccl_tree_correction(NcclProtocol p, double bytes);

}  // namespace shardplan
