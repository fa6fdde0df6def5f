#include "simulator/runtime_memory.h"

#include <array>

#include "core/placement.h"

namespace shardplan {

namespace {

constexpr int kCublasHandles = 2;
constexpr int64_t kCublasWorkspaceHopper = int64_t{32} << 20;
constexpr int64_t kCublasWorkspaceBefore = 4096 * 1024 * 2 + 16 * 1024 * 8;
constexpr int kP2pChannelsPerPeer = 2;

int64_t collective_buffers(const Cluster& c, const GroupSpan& span) {
  if (span.size <= 1) return 0;
  const int connections = span.nodes > 1 ? 2 : 1;
  return int64_t{nccl_channels(c.levels[span.level])} * connections * kNcclConnectionBytes;
}

}  // namespace

RuntimeMemory runtime_memory(const Cluster& c, const Layout& l, int stage) {
  RuntimeMemory r;
  r.cuda_context_bytes = c.device.reserved_bytes();
  if (c.device.arch == GpuArch::none) return r;
  r.cublas_workspace_bytes =
      kCublasHandles *
      (c.device.arch >= GpuArch::hopper ? kCublasWorkspaceHopper : kCublasWorkspaceBefore);
  const int64_t rank = rank_of(l, RankCoord{.pp = stage});
  std::array<Group, 5> groups{Group::tp, Group::cp, Group::ep, dense_dp_group(l), Group::expert_dp};
  for (const Group g : groups) {
    if (g == Group::expert_dp && l.ep == 1) continue;  // the data-parallel group itself
    r.nccl_buffer_bytes += collective_buffers(c, group_span(c, l, rank, g));
  }
  // PyTorch's default group over every rank: the innermost level whose domain holds them all.
  GroupSpan world{.size = static_cast<int>(l.world())};
  while (world.level + 1 < c.levels.size() && c.level_span(world.level) < l.world()) ++world.level;
  world.nodes = static_cast<int>((l.world() + c.devices_per_node - 1) / c.devices_per_node);
  r.nccl_buffer_bytes += collective_buffers(c, world);
  if (l.pp > 1) {
    const int neighbours = stage == 0 || stage == l.pp - 1 ? 1 : 2;
    r.nccl_buffer_bytes += int64_t{neighbours} * kP2pChannelsPerPeer * kNcclConnectionBytes;
  }
  return r;
}

}  // namespace shardplan
