// NCCL v2.20.3's tuning tables (NVIDIA/nccl tag v2.20.3-1, src/graph/tuning.cc; BSD-3-Clause),
// quoted as numbers only. Rows and columns keep NCCL's order so that each can be checked against
// the file.
#include "simulator/nccl_tuning.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace shardplan {
namespace {

constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

int index(NcclProtocol p) {
  return p == NcclProtocol::ll ? kLL : p == NcclProtocol::ll128 ? kLL128 : kSimple;
}
int index(NcclAlgorithm a) {
  return a == NcclAlgorithm::tree ? 0 : a == NcclAlgorithm::ring ? 1 : 2;
}

// baseLat, us: Tree {LL, LL128, Simple}, Ring, NVLS. NVLS's latency is its hop alone (the table's
// 0; ncclTopoTuneModel sets latencies[NVLS] = intraLat).
constexpr double kBaseLat[3][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {0, 0, 0}};

// hwLat[NVLINK / PCI / NET][Tree / Ring / NVLS][LL / LL128 / Simple], us. (Tree Simple's 28 us on
// NVLink stands for a 256 KiB chunk's pipeline fill; NCCL 2.22 moved it into baseLat.)
constexpr double kHwLat[3][3][3] = {
    {{.6, 1.25, 28}, {.6, 1.9, 3.4}, {0, 0, 23}},   // NVLink
    {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}, {0, 0, 0}},   // PCI
    {{5.0, 8.5, 28}, {2.7, 4.0, 14.0}, {0, 0, 18}}  // network
};

// Rows: compute capability index (Volta, Ampere, Hopper); columns: 1, 2, 4+ nodes.
// llMaxBws: one node reads the GPU's row; several nodes read the CPU's (Intel: row 0, AMD: row 1).
// The CPU is not in the cluster description: several nodes take the Intel row (DGX H100's Xeons).
constexpr double kLLMaxBw[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
constexpr double kPerChMaxRingLL128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLL128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kPerChMaxTree[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};

// treeCorrectionFactor[protocol][log2(bytes / 64)], 64 B to 256 MiB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// NCCL's compCapIndex: Hopper for sm90 and later (Blackwell postdates v2.20.3 and falls there),
// Ampere for sm80-sm89, Volta below (and for devices NCCL does not know).
int arch_index(GpuArch arch) {
  switch (arch) {
    case GpuArch::hopper:
    case GpuArch::blackwell:
      return 2;
    case GpuArch::ampere:
      return 1;
    case GpuArch::none:
    case GpuArch::volta:
      return 0;
  }
  assert(false && "unknown GPU architecture");
  return 0;
}

}  // namespace

NcclHop nccl_hop(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink:
      return NcclHop::nvlink;
    case LinkKind::infiniband:
    case LinkKind::roce:
      return NcclHop::net;
    case LinkKind::pcie:
    case LinkKind::shared_memory:  // NCCL's SHM transport crosses the CPU, a PCI-class path
      return NcclHop::pci;
  }
  assert(false && "unknown link kind");
  return NcclHop::pci;
}

double nccl_base_latency_us(NcclAlgorithm a, NcclProtocol p) {
  return kBaseLat[index(a)][index(p)];
}

double nccl_hop_latency_us(NcclHop h, NcclAlgorithm a, NcclProtocol p) {
  return kHwLat[static_cast<int>(h)][index(a)][index(p)];
}

NcclCaps nccl_caps(GpuArch arch, int nodes) {
  const int a = arch_index(arch);
  const int n = nodes <= 2 ? nodes - 1 : 2;  // NCCL's index2
  return {.ll_max_GBps = kLLMaxBw[nodes == 1 ? a : 0][n],
          .per_channel_ring_ll128_GBps = kPerChMaxRingLL128[a][n],
          .per_channel_tree_ll128_GBps = kPerChMaxTreeLL128[a][n],
          .per_channel_tree_GBps = kPerChMaxTree[a][n]};
}

// LL128 is enabled by default only on sm70, sm80 and sm90 with NVLink paths inside the node
// (tuning.cc, "Enable LL128 by default only on Volta/Ampere/Hopper+NVLink"); later NCCL versions
// add Blackwell, kept here.
bool nccl_protocol_enabled(GpuArch arch, LinkKind inside_node, NcclProtocol p) {
  if (p == NcclProtocol::simple) return true;
  if (arch == GpuArch::none) return false;
  if (p == NcclProtocol::ll) return true;
  return inside_node == LinkKind::nvlink;
}

double nccl_tree_correction(NcclProtocol p, double bytes) {
  int log_size = 0;  // NCCL's log2i(nBytes >> 6)
  for (uint64_t v = static_cast<uint64_t>(bytes) >> 6; v >>= 1;) ++log_size;
  return log_size < 23 ? kTreeCorrection[index(p)][log_size] : 1.0;
}

}  // namespace shardplan
