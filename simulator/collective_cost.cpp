// Alpha-beta time of a collective: the links each algorithm crosses, what NCCL achieves on them,
// and the algorithm NCCL would pick. Pure arithmetic on the descriptions: no allocation, no logs
// (the planner calls this millions of times).
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
};

struct Timing {
  double time_s = 0;
  Algorithm algorithm = Algorithm::ring;
  size_t level = 0;  // the level that bounds the time
};

struct Bandwidth {
  double bytes_per_s = kUnbounded;
  size_t level = 0;
};

Bandwidth slower(Bandwidth a, Bandwidth b) {
  return b.bytes_per_s < a.bytes_per_s ? b : a;
}

// One step's alpha on a level: its per-hop latency (Cluster: "one hop, as alpha").
double alpha_s(const InterconnectLevel& l) {
  return l.latency_us * 1e-6;
}

// Paid once per NCCL call, by every algorithm below.
constexpr double kBaseLatency_s = kNcclBaseLatency_us * 1e-6;

bool inside_node(const Cluster& c, size_t i) {
  return c.level_span(i) <= c.devices_per_node;
}

// What `senders` members of one node move per second together through level i. A scale-up link is
// each device's own port. Scale-out NICs belong to the node, and NCCL sends a device's traffic
// through the NICs nearest it (ncclTopoGetLocalNet in src/graph/: the NICs with the best path
// to the GPU; on DGX nodes, the one on the GPU's PCIe switch). So a member gets at most its own
// NICs, nic_GBps · max(1, nics_per_node / devices_per_node), and at most its share of the node's
// nics_per_node · nic_GBps among the devices using them at once, over the fabric's oversubscription
// (a lone flow in an oversubscribed fabric still runs at its NIC's rate).
// A level the profile measured (apply_profile put its send_recv fit's algbw there) is taken as
// achieved: NCCL's efficiency factors describe datasheet rates only.
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
    return l.bandwidth_GBps * kBytesPerGB * (as_measured ? 1 : kNcclScaleUpEfficiency);
  double own_GBps =
      l.nic_GBps * std::max(1.0, static_cast<double>(l.nics_per_node) / g.cluster.devices_per_node);
  double share_GBps = l.nics_per_node * l.nic_GBps / (g.nic_sharers * l.oversubscription);
  return senders * std::min(own_GBps, share_GBps) * kBytesPerGB *
         (as_measured ? 1 : kNcclScaleOutEfficiency);
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

// The links under a ring, and under a tree's chains and inter-node edges. Inside a node only where
// members share one. A node-contiguous ring leaves each node by one edge per channel, and NCCL
// spreads its channels over the node's members and their NICs: per step the node sends one rank's
// chunk through the NICs of its `per_node` members together.
Bandwidth ring_bandwidth(const GroupShape& g) {
  Bandwidth beyond = slowest(g, Where::beyond_node, g.per_node);
  return g.per_node > 1 ? slower(slowest(g, Where::inside_node, g.per_node), beyond) : beyond;
}

// Latency of a chunk's path over `hops` consecutive ring hops, as NCCL's ring model sums it
// (src/graph/tuning.cc: intra-node steps × intraLat + inter-node steps × interLat). A
// node-contiguous ring has one edge leaving each node, so a path of fewer than n hops takes at most
// min(nodes, hops) of them, each at the spanned level's alpha; the others stay on the innermost
// level.
double path_latency_s(const GroupShape& g, int hops) {
  int outer = g.nodes > 1 ? std::min(g.nodes, hops) : 0;
  return (hops - outer) * alpha_s(g.cluster.levels[0]) + outer * alpha_s(g.cluster.levels[g.level]);
}

// Ring reduce-scatter and all-gather: n−1 steps, each rank sending bytes/n to its neighbour,
// T = (n−1)α + (n−1)/n · bytes · β (Thakur, Rabenseifner & Gropp 2005, ring allgather). All-reduce
// is the two back to back, T = 2(n−1)α + 2(n−1)/n · bytes · β, which is bandwidth-optimal
// (Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations").
Timing ring(const GroupShape& g, Collective c, double bytes) {
  int passes = c == Collective::all_reduce ? 2 : 1;
  int steps = g.size - 1;
  Bandwidth bw = ring_bandwidth(g);
  double pass_s = path_latency_s(g, steps) + steps * (bytes / g.size) / bw.bytes_per_s;
  return {kBaseLatency_s + passes * pass_s, Algorithm::ring, bw.level};
}

// NCCL's double binary tree (NCCL 2.4; Sanders, Speck & Träff 2009, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan"): a chain through each node's members, two binary trees
// across the nodes each carrying half the buffer, reduce up then broadcast down, pipelined.
// Latency as NCCL's model (src/graph/tuning.cc): 2·((m−1)·alpha_intra + log2(nodes)·alpha_inter).
// Bandwidth: each chain member sends the buffer up and down (2·bytes) and each node sends 2·bytes
// across (inner vertex of one tree: bytes/2 up and bytes/2 to each of two children; leaf of the
// other: bytes/2 up), over the same links as the ring: T_bw = 2·bytes/bw.
Timing tree(const GroupShape& g, double bytes) {
  int depth = std::bit_width(static_cast<unsigned>(g.nodes)) - 1;  // floor(log2(nodes))
  double latency_s = kBaseLatency_s + 2 * ((g.per_node - 1) * alpha_s(g.cluster.levels[0]) +
                                           depth * alpha_s(g.cluster.levels[g.level]));
  Bandwidth bw = ring_bandwidth(g);
  return {latency_s + 2 * bytes / bw.bytes_per_s, Algorithm::tree, bw.level};
}

// NCCL runs the algorithm whose modeled time is least (src/enqueue.cc getAlgoInfo over the latency
// and bandwidth tables of src/graph/tuning.cc). For all-reduce the candidates are ring and, for a
// group spanning nodes, tree: tree wins small buffers on many nodes (log2 instead of linear
// latency), ring large ones (2(n−1)/n instead of 2 buffers per link).
Timing nccl_all_reduce(const GroupShape& g, double bytes) {
  Timing r = ring(g, Collective::all_reduce, bytes);
  if (g.nodes == 1) return r;
  Timing t = tree(g, bytes);
  return t.time_s < r.time_s ? t : r;
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
  return {2 * inside.time_s + between.time_s, Algorithm::hierarchical,
          between.time_s >= 2 * inside.time_s ? between.level : inside.level};
}

Timing all_reduce(const GroupShape& g, double bytes, std::optional<Algorithm> forced) {
  bool spans_nodes = g.nodes > 1;
  bool same_members_per_node = spans_nodes && g.per_node > 1 && g.size == g.per_node * g.nodes;
  if (forced == Algorithm::ring) return ring(g, Collective::all_reduce, bytes);
  if (forced == Algorithm::tree && spans_nodes) return tree(g, bytes);
  if (forced == Algorithm::hierarchical && same_members_per_node) return hierarchical(g, bytes);
  return nccl_all_reduce(g, bytes);
}

// NCCL's broadcast is a ring only (src/graph/tuning.cc): a pipelined chain from the root, so the
// last rank hears after n−1 hops and the buffer crosses each link once: T = path latency + bytes·β.
Timing broadcast(const GroupShape& g, double bytes) {
  Bandwidth bw = ring_bandwidth(g);
  return {kBaseLatency_s + path_latency_s(g, g.size - 1) + bytes / bw.bytes_per_s, Algorithm::ring,
          bw.level};
}

// Pairwise exchange (Thakur, Rabenseifner & Gropp 2005, all-to-all for long messages): n−1 steps,
// each rank sending bytes/n to every other, T = (n−1)α + (n−1)/n · bytes · β; NCCL runs it as
// grouped send/recv. Past a scale-out level, the chunks for members on the same node take the
// node's links while the rest leave through the member's NIC share, both at once; inside a
// scale-up domain (a node, an NVL72 rack) all of it takes the device's one port.
Timing all_to_all(const GroupShape& g, double bytes) {
  double latency_s = kBaseLatency_s + (g.size - 1) * alpha_s(g.cluster.levels[g.level]);
  double chunk = bytes / g.size;
  Bandwidth inside = slowest(g, Where::inside_node, 1);
  Bandwidth beyond = slowest(g, Where::beyond_node, 1);
  if (!g.cluster.levels[g.level].is_scale_out()) {
    Bandwidth port = slower(inside, beyond);
    return {latency_s + (g.size - 1) * chunk / port.bytes_per_s, Algorithm::direct, port.level};
  }
  double inside_s = (g.per_node - 1) * chunk / inside.bytes_per_s;
  double beyond_s = (g.size - g.per_node) * chunk / beyond.bytes_per_s;
  return beyond_s >= inside_s ? Timing{latency_s + beyond_s, Algorithm::direct, beyond.level}
                              : Timing{latency_s + inside_s, Algorithm::direct, inside.level};
}

// One transfer on the level joining the pair: T = α + bytes·β (Thakur et al. 2005's cost model).
Timing send_recv(const GroupShape& g, double bytes) {
  Where where = inside_node(g.cluster, g.level) ? Where::inside_node : Where::beyond_node;
  Bandwidth link = slowest(g, where, 1);
  return {kBaseLatency_s + alpha_s(g.cluster.levels[g.level]) + bytes / link.bytes_per_s,
          Algorithm::direct, link.level};
}

Timing time_collective(const GroupShape& g, Collective c, double bytes,
                       std::optional<Algorithm> forced) {
  switch (c) {
    case Collective::all_reduce:
      return all_reduce(g, bytes, forced);
    // NCCL runs reduce-scatter and all-gather as rings only (src/graph/tuning.cc).
    case Collective::reduce_scatter:
    case Collective::all_gather:
      return ring(g, c, bytes);
    case Collective::broadcast:
      return broadcast(g, bytes);
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
               .nic_sharers = std::max(options.nic_sharing_devices, span.max_ranks_per_node),
               .profile = options.profile};
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
  cost.level = t.level;
  cost.algbw_GBps = static_cast<double>(bytes) / t.time_s / kBytesPerGB;
  cost.busbw_GBps = cost.algbw_GBps * bus_bandwidth_factor(c, span.size);
  return cost;
}

}  // namespace shardplan
