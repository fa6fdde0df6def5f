// NCCL's cost model on the cluster's links: what each algorithm and protocol achieves on the
// links it crosses, its latency, and the least of them as NCCL picks it. Pure arithmetic on the
// descriptions: no allocation, no logs (the planner calls this millions of times).
#include "simulator/collective_cost.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <limits>

namespace shardplan {
namespace {

constexpr double kBytesPerGB = 1e9;
constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// The group as the algorithms see it.
struct GroupShape {
  const Cluster& cluster;
  int size;                // n
  int nodes;               // nodes touched
  int per_node;            // m: most members on one node
  size_t level;            // innermost level holding the whole group
  int nic_sharers;         // devices sharing a node's NICs at once (>= per_node)
  const Profile* profile;  // levels with a send_recv fit carry measured rates
  const NcclPhysics& physics;
};

struct Timing {
  double time_s = kUnbounded;
  Algorithm algorithm = Algorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
  size_t level = 0;  // the level that bounds the time
};

Timing faster(const Timing& a, const Timing& b) {
  return b.time_s < a.time_s ? b : a;
}

struct Bandwidth {
  double bytes_per_s = kUnbounded;
  size_t level = 0;
};

Bandwidth slower(Bandwidth a, Bandwidth b) {
  return b.bytes_per_s < a.bytes_per_s ? b : a;
}

// One step on level i for algorithm a and protocol p. A level's latency_us is its LL ring hop (the
// topology files cite hwLat[..][Ring][LL] of src/graph/tuning.cc, or a measured one-way latency);
// the other protocols and algorithms keep NCCL's ratios to it (hwLat of NCCL v2.20.3).
double hop_s(const InterconnectLevel& l, NcclAlgorithm a, NcclProtocol p) {
  const NcclHop h = nccl_hop(l.kind);
  return l.latency_us * 1e-6 * nccl_hop_latency_us(h, a, p) /
         nccl_hop_latency_us(h, NcclAlgorithm::ring, NcclProtocol::ll);
}

// What every call on a GPU pays outside NCCL's latency model (kNcclLaunch_us); nothing for MPI
// on CPU cores.
double launch_s(const GroupShape& g) {
  return g.cluster.device.arch == GpuArch::none ? 0 : g.physics.launch_us * 1e-6;
}

double base_s(NcclAlgorithm a, NcclProtocol p) {
  return nccl_base_latency_us(a, p) * 1e-6;
}

bool runs(const GroupShape& g, NcclProtocol p) {
  return nccl_protocol_enabled(g.cluster.device.arch, g.cluster.levels[0].kind, p);
}

int channels(const GroupShape& g) {
  return nccl_channels(g.cluster.levels[g.level]);
}

bool inside_node(const Cluster& c, size_t i) {
  return c.level_span(i) <= c.devices_per_node;
}

// What `senders` members of one node move per second together through level i: NCCL's busBw
// (nChannels × per-channel bandwidth of its topology search), as the achieved fraction of the
// datasheet rates. A scale-up link is each device's own port. Scale-out NICs belong to the node,
// and NCCL sends a device's traffic through the NICs nearest it (ncclTopoGetLocalNet in
// src/graph/: the NICs with the best path to the GPU; on DGX nodes, the one on the GPU's PCIe
// switch). So a member gets at most its own NICs, nic_GBps · max(1, nics_per_node /
// devices_per_node), and at most its share of the node's nics_per_node · nic_GBps among the
// devices using them at once, over the fabric's oversubscription (a lone flow in an oversubscribed
// fabric still runs at its NIC's rate). A level the profile measured (apply_profile put its
// send_recv fit's algbw there) is taken as achieved: the efficiencies describe datasheet rates.
bool measured(const GroupShape& g, size_t i) {
  if (!g.profile) return false;
  for (const CollectiveFit& f : g.profile->collectives)
    if (f.collective == Collective::send_recv && f.level == i) return true;
  return false;
}

double level_bytes_per_s(const GroupShape& g, size_t i, int senders) {
  const InterconnectLevel& l = g.cluster.levels[i];
  const bool as_measured = measured(g, i);
  if (!l.is_scale_out())
    return l.bandwidth_GBps * kBytesPerGB * (as_measured ? 1 : g.physics.scale_up_efficiency);
  double own_GBps =
      l.nic_GBps * std::max(1.0, static_cast<double>(l.nics_per_node) / g.cluster.devices_per_node);
  double share_GBps = l.nics_per_node * l.nic_GBps / (g.nic_sharers * l.oversubscription);
  return senders * std::min(own_GBps, share_GBps) * kBytesPerGB *
         (as_measured ? 1 : g.physics.scale_out_efficiency);
}

enum class Where { inside_node, beyond_node };

// The slowest of the levels up to the group's that lie inside a node, or beyond it.
Bandwidth slowest(const GroupShape& g, Where where, int senders) {
  Bandwidth b;
  for (size_t i = 0; i <= g.level; ++i)
    if (inside_node(g.cluster, i) == (where == Where::inside_node))
      b = slower(b, {level_bytes_per_s(g, i, senders), i});
  return b;
}

// The links under a ring, and under a tree's chains and inter-node edges: NCCL's busBw. Inside a
// node only where members share one. A node-contiguous ring leaves each node by one edge per
// channel, and NCCL spreads its channels over the node's members and their NICs: per step the node
// sends one rank's chunk through the NICs of its `per_node` members together.
Bandwidth ring_bandwidth(const GroupShape& g) {
  Bandwidth beyond = slowest(g, Where::beyond_node, g.per_node);
  return g.per_node > 1 ? slower(slowest(g, Where::inside_node, g.per_node), beyond) : beyond;
}

// A ring's steps as NCCL's model counts them (src/graph/tuning.cc): `steps` hops of latency, of
// which `inter_steps` cross nodes, and `bus_steps` chunks of bytes/n through every link.
struct RingSteps {
  int steps;
  int inter_steps;
  int bus_steps;
};

// All-reduce: reduce-scatter then all-gather, 2(n−1) steps (Patarasuk & Yuan 2009, bandwidth
// optimal); NCCL counts 2·nodes of them as inter-node. Reduce-scatter and all-gather: n−1 steps,
// nodes−1 inter-node (Thakur, Rabenseifner & Gropp 2005, ring). Broadcast: a pipelined chain from
// the root, the buffer crossing each link once (nsteps = n for the bandwidth), the last rank
// hearing after n−1 hops of which at most one per node leaves it.
RingSteps ring_steps(const GroupShape& g, Collective c) {
  const int n = g.size, nodes = g.nodes;
  switch (c) {
    case Collective::all_reduce:
      return {2 * (n - 1), nodes > 1 ? std::min(2 * nodes, 2 * (n - 1)) : 0, 2 * (n - 1)};
    case Collective::broadcast:
      return {n - 1, nodes > 1 ? std::min(nodes, n - 1) : 0, n};
    default:
      return {n - 1, nodes - 1, n - 1};
  }
}

// NCCL's ring with protocol p: busBw refined per protocol (LL carries 8 bytes of data per 16, a
// quarter of the bus rate on a ring across nodes or reducing, a third otherwise, capped by
// llMaxBw; LL128 120 of 128 bytes, capped per channel), converted to algBw by n / nsteps; latency
// baseLat + intra-node steps · intraLat + inter-node steps · interLat, intraLat at least the
// network post overhead across nodes (1 us, ×3 for Simple), and ×1.4 for a multi-node Simple
// all-reduce past 64 bytes per channel and rank (the ring's plateau, sm80 and later; 1.9 before).
Timing ring_with(const GroupShape& g, Collective c, double bytes, NcclProtocol p) {
  const RingSteps s = ring_steps(g, c);
  const NcclCaps caps = nccl_caps(g.cluster.device.arch, g.nodes);
  const Bandwidth bus = ring_bandwidth(g);
  const bool reduces_or_spans = g.nodes > 1 || c == Collective::all_reduce;
  double bw = bus.bytes_per_s;
  if (p == NcclProtocol::ll)
    bw = std::min(caps.ll_max_GBps * kBytesPerGB, bw * (reduces_or_spans ? 1.0 / 4 : 1.0 / 3));
  if (p == NcclProtocol::ll128) {
    const double ppn = static_cast<double>(g.size) / g.nodes;
    bw = std::min(bw * (ppn < 2 ? 0.7 : 0.92),
                  channels(g) * caps.per_channel_ring_ll128_GBps * kBytesPerGB);
  }
  const double algbw = bw * g.size / s.bus_steps;
  double intra_s = hop_s(g.cluster.levels[0], NcclAlgorithm::ring, p);
  if (g.nodes > 1) intra_s = std::max(intra_s, (p == NcclProtocol::simple ? 3 : 1) * 1e-6);
  const double inter_s = hop_s(g.cluster.levels[g.level], NcclAlgorithm::ring, p);
  double latency_s =
      base_s(NcclAlgorithm::ring, p) + (s.steps - s.inter_steps) * intra_s + s.inter_steps * inter_s;
  if (c == Collective::all_reduce && p == NcclProtocol::simple && g.nodes > 1 &&
      bytes / (channels(g) * g.size) >= 64)
    latency_s *= g.cluster.device.arch == GpuArch::volta ? 1.9 : 1.4;
  return {launch_s(g) + latency_s + bytes / algbw, Algorithm::ring, p, bus.level};
}

Timing ring(const GroupShape& g, Collective c, double bytes) {
  Timing best;
  for (NcclProtocol p : kNcclProtocols)
    if (runs(g, p)) best = faster(best, ring_with(g, c, bytes, p));
  return best;
}

// NCCL's double binary tree (NCCL 2.4; Sanders, Speck & Träff 2009): a chain through each node's
// members, two binary trees across the nodes each carrying half the buffer, reduce up then
// broadcast down, pipelined. NCCL's model (src/graph/tuning.cc): busBw ×0.92 capped by
// perChMaxTree per channel, LL a further /3.8 capped by llMaxBw, LL128 ×7/9 on one node (120/128
// across nodes) capped by perChMaxTreeLL128; algBw = busBw / 2 (each link carries the buffer up
// and down), times the tree's size correction; latency baseLat + 2·((m−1)·intraLat +
// log2(nodes)·interLat).
Timing tree_with(const GroupShape& g, double bytes, NcclProtocol p) {
  const NcclCaps caps = nccl_caps(g.cluster.device.arch, g.nodes);
  const Bandwidth bus = ring_bandwidth(g);
  double bw = std::min(bus.bytes_per_s * 0.92, channels(g) * caps.per_channel_tree_GBps * kBytesPerGB);
  if (p == NcclProtocol::ll) bw = std::min(bw / 3.8, caps.ll_max_GBps * kBytesPerGB);
  if (p == NcclProtocol::ll128)
    bw = std::min(bw * (g.nodes == 1 ? 7.0 / 9 : 120.0 / 128),
                  channels(g) * caps.per_channel_tree_ll128_GBps * kBytesPerGB);
  const double algbw = bw * 0.5 * nccl_tree_correction(p, bytes);
  const int depth = std::bit_width(static_cast<unsigned>(g.nodes)) - 1;  // NCCL's log2i
  const double latency_s =
      launch_s(g) + base_s(NcclAlgorithm::tree, p) +
      2 * ((g.per_node - 1) * hop_s(g.cluster.levels[0], NcclAlgorithm::tree, p) +
           depth * hop_s(g.cluster.levels[g.level], NcclAlgorithm::tree, p));
  return {latency_s + bytes / algbw, Algorithm::tree, p, bus.level};
}

Timing tree(const GroupShape& g, double bytes) {
  Timing best;
  for (NcclProtocol p : kNcclProtocols)
    if (runs(g, p)) best = faster(best, tree_with(g, bytes, p));
  return best;
}

// NVLink SHARP (NCCL 2.17+): the NVSwitch reduces and multicasts, so each GPU sends and receives
// its buffer about once. NCCL's model: Simple only, busBw × 5/6 as algBw, latency the NVLS hop
// alone (23 us on NVLink). One node only (v2.20.3 disables NVLS across nodes without CollNet and
// models NVLS-tree apart, not here).
bool nvls_applies(const GroupShape& g) {
  const InterconnectLevel& l = g.cluster.levels[g.level];
  return g.nodes == 1 && l.nvlink_sharp && g.cluster.device.arch != GpuArch::none;
}

Timing nvls(const GroupShape& g, double bytes) {
  const Bandwidth bus = ring_bandwidth(g);
  const NcclProtocol p = NcclProtocol::simple;
  const double latency_s =
      launch_s(g) + hop_s(g.cluster.levels[g.level], NcclAlgorithm::nvls, p);
  return {latency_s + bytes / (bus.bytes_per_s * 5.0 / 6), Algorithm::nvls, p, bus.level};
}

// NCCL runs the algorithm and protocol whose modelled time is least (src/enqueue.cc
// topoGetAlgoInfo over the tables of src/graph/tuning.cc). All-reduce: ring, tree and NVLS;
// reduce-scatter and all-gather: ring and NVLS.
Timing nccl_all_reduce(const GroupShape& g, double bytes) {
  Timing t = faster(ring(g, Collective::all_reduce, bytes), tree(g, bytes));
  return nvls_applies(g) ? faster(t, nvls(g, bytes)) : t;
}

Timing nccl_scatter_gather(const GroupShape& g, Collective c, double bytes) {
  Timing t = ring(g, c, bytes);
  return nvls_applies(g) ? faster(t, nvls(g, bytes)) : t;
}

// Innermost level holding a whole node.
size_t node_level(const Cluster& c) {
  size_t i = 0;
  while (c.level_span(i) < c.devices_per_node) ++i;
  return i;
}

// Hierarchical all-reduce: reduce-scatter inside each node, all-reduce of each 1/m shard across the
// nodes by the m members at once (each over its share of the node's NICs), all-gather inside the
// node, back to back as the three calls (Horovod's hierarchical all-reduce; the structure of NCCL's
// CollNet-chain and NVLS-tree).
Timing hierarchical(const GroupShape& g, double bytes) {
  GroupShape node = g;
  node.size = g.per_node;
  node.nodes = 1;
  node.level = node_level(g.cluster);
  GroupShape across = g;
  across.size = g.nodes;
  across.per_node = 1;
  Timing inside = ring(node, Collective::reduce_scatter, bytes);  // the all-gather costs the same
  Timing between = nccl_all_reduce(across, bytes / g.per_node);
  const bool across_bounds = between.time_s >= 2 * inside.time_s;
  return {2 * inside.time_s + between.time_s, Algorithm::hierarchical,
          across_bounds ? between.protocol : inside.protocol,
          across_bounds ? between.level : inside.level};
}

Timing all_reduce(const GroupShape& g, double bytes, std::optional<Algorithm> forced) {
  bool spans_nodes = g.nodes > 1;
  bool same_members_per_node = spans_nodes && g.per_node > 1 && g.size == g.per_node * g.nodes;
  if (forced == Algorithm::ring) return ring(g, Collective::all_reduce, bytes);
  if (forced == Algorithm::tree && spans_nodes) return tree(g, bytes);
  if (forced == Algorithm::hierarchical && same_members_per_node) return hierarchical(g, bytes);
  return nccl_all_reduce(g, bytes);
}

// Pairwise exchange (Thakur, Rabenseifner & Gropp 2005, all-to-all for long messages): n−1 steps,
// each rank sending bytes/n to every other, T = (n−1)α + (n−1)/n · bytes · β; NCCL runs it as
// grouped send/recv. Past a scale-out level, the chunks for members on the same node take the
// node's links while the rest leave through the member's NIC share, both at once; inside a
// scale-up domain (a node, an NVL72 rack) all of it takes the device's one port. NCCL's p2p has no
// tuning model: its latency is the ring's Simple base and hop, per step.
Timing all_to_all(const GroupShape& g, double bytes) {
  const NcclProtocol p = NcclProtocol::simple;
  double latency_s = launch_s(g) + base_s(NcclAlgorithm::ring, p) +
                     (g.size - 1) * hop_s(g.cluster.levels[g.level], NcclAlgorithm::ring, p);
  double chunk = bytes / g.size;
  Bandwidth inside = slowest(g, Where::inside_node, 1);
  Bandwidth beyond = slowest(g, Where::beyond_node, 1);
  if (!g.cluster.levels[g.level].is_scale_out()) {
    Bandwidth port = slower(inside, beyond);
    return {latency_s + (g.size - 1) * chunk / port.bytes_per_s, Algorithm::direct, p, port.level};
  }
  double inside_s = (g.per_node - 1) * chunk / inside.bytes_per_s;
  double beyond_s = (g.size - g.per_node) * chunk / beyond.bytes_per_s;
  return beyond_s >= inside_s ? Timing{latency_s + beyond_s, Algorithm::direct, p, beyond.level}
                              : Timing{latency_s + inside_s, Algorithm::direct, p, inside.level};
}

// One transfer on the level joining the pair: T = α + bytes·β (Thakur et al. 2005's cost model),
// α the ring's Simple base and one hop (as all_to_all).
Timing send_recv(const GroupShape& g, double bytes) {
  const NcclProtocol p = NcclProtocol::simple;
  Where where = inside_node(g.cluster, g.level) ? Where::inside_node : Where::beyond_node;
  Bandwidth link = slowest(g, where, 1);
  return {launch_s(g) + base_s(NcclAlgorithm::ring, p) +
              hop_s(g.cluster.levels[g.level], NcclAlgorithm::ring, p) + bytes / link.bytes_per_s,
          Algorithm::direct, p, link.level};
}

Timing time_collective(const GroupShape& g, Collective c, double bytes,
                       std::optional<Algorithm> forced) {
  switch (c) {
    case Collective::all_reduce:
      return all_reduce(g, bytes, forced);
    case Collective::reduce_scatter:
    case Collective::all_gather:
      return nccl_scatter_gather(g, c, bytes);
    // NCCL's broadcast is a ring only (src/graph/tuning.cc).
    case Collective::broadcast:
      return ring(g, c, bytes);
    case Collective::all_to_all:
      return all_to_all(g, bytes);
    case Collective::send_recv:
      return send_recv(g, bytes);
  }
  assert(false && "unknown collective");
  return {};
}

}  // namespace

// nccl-tests doc/PERFORMANCE.md: busbw = algbw × 2(n−1)/n for all-reduce, × (n−1)/n for
// reduce-scatter, all-gather and all-to-all, × 1 for broadcast and send/recv.
CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span) {
  return collective_cost(cluster, c, bytes, span, CollectiveOptions{});
}

CollectiveCost collective_cost(const Cluster& cluster, Collective c, int64_t bytes,
                               const GroupSpan& span, const CollectiveOptions& options) {
  assert(bytes >= 0 && span.level < cluster.levels.size());
  assert(span.size >= 1 && span.nodes >= 1 && span.max_ranks_per_node >= 1);
  CollectiveCost cost;
  cost.level = span.level;
  if (span.size == 1) return cost;
  GroupShape g{.cluster = cluster,
               .size = span.size,
               .nodes = span.nodes,
               .per_node = span.max_ranks_per_node,
               .level = span.level,
               .nic_sharers = std::max(
                   {options.nic_sharing_devices, span.max_ranks_per_node, span.nic_sharers}),
               .profile = options.profile,
               .physics = options.physics};
  Timing t = time_collective(g, c, static_cast<double>(bytes), options.all_reduce_algorithm);
  const bool forced = c == Collective::all_reduce && options.all_reduce_algorithm;
  const CollectiveFit* fit = nullptr;
  if (options.profile && !forced) {
    fit = find_collective_fit(*options.profile, c, span.level, span.size, options.cold_input);
    if (!fit && options.cold_input)
      fit = find_collective_fit(*options.profile, c, span.level, span.size, false);
  }
  if (fit) {
    t.time_s = fit->time_s(bytes);  // Hockney's alpha + bytes·beta, as calibrate fitted it
    cost.from_profile = true;
  }
  cost.time_s = t.time_s;
  cost.algorithm = t.algorithm;
  cost.protocol = t.protocol;
  cost.level = t.level;
  cost.algbw_GBps = static_cast<double>(bytes) / t.time_s / kBytesPerGB;
  cost.busbw_GBps = cost.algbw_GBps * bus_bandwidth_factor(c, span.size);
  return cost;
}

// NCCL's channel shedding (src/enqueue.cc topoGetAlgoInfo, v2.20.3): threads per CTA 512 for LL
// and Simple, 640 for LL128 (NCCL_LL128_MAX_NTHREADS); bytes per thread before another channel is
// worth it 8 for LL (×n on a ring) and LL128, 64 for Simple (NCCL_*_THREAD_THRESHOLD); NVLS keeps
// its channels.
int nccl_channels(const Cluster& cluster, Collective c, int64_t bytes, const GroupSpan& span) {
  if (span.size == 1) return 0;
  return nccl_channels(cluster, collective_cost(cluster, c, bytes, span), bytes, span);
}

int nccl_channels(const Cluster& cluster, const CollectiveCost& cost, int64_t bytes,
                  const GroupSpan& span) {
  if (span.size == 1) return 0;
  int nc = nccl_channels(cluster.levels[span.level]);
  if (cost.algorithm == Algorithm::nvls) return nc;
  const int threads = cost.protocol == NcclProtocol::ll128 ? 640 : 512;
  int64_t threshold = cost.protocol == NcclProtocol::simple ? 64 : 8;
  if (cost.protocol == NcclProtocol::ll && cost.algorithm == Algorithm::ring) threshold *= span.size;
  while (nc > 1 && bytes < int64_t{nc} * threads * threshold) --nc;
  return nc;
}

}  // namespace shardplan
