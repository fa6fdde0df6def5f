#include "simulator/runtime_memory.h"

#include <catch2/catch.hpp>

#include "simulator/estimate.h"
#include "simulator_fixtures.h"

using namespace shardplan;

namespace {
constexpr int64_t kMiB = 1 << 20;
}

TEST_CASE("NCCL's buffers: a ring connection per channel, twice across nodes, per communicator",
          "[memory][runtime]") {
  // 64 H100s on 8 nodes, tp = 8 within a node, pp = 4, dp = 2 across nodes.
  const Cluster c = test::preset_cluster("dgx-h100", 8);
  const Layout l = test::layout(64, 128, 8, 4);
  const int nvlink = nccl_channels(c.levels.front());  // 450 GB/s a direction ÷ 25 per link: 18
  const int network = nccl_channels(c.levels.back());  // 2 per NIC, 8 NICs: 16
  CHECK(nvlink == 18);
  CHECK(network == 16);
  const int64_t tp = int64_t{nvlink} * kNcclConnectionBytes;
  const int64_t dp = int64_t{network} * 2 * kNcclConnectionBytes;     // spans 2 nodes
  const int64_t world = int64_t{network} * 2 * kNcclConnectionBytes;  // PyTorch's default group
  const int64_t p2p = 2 * kNcclConnectionBytes;                       // one neighbour, 2 channels
  const RuntimeMemory first = runtime_memory(c, l, 0);
  CHECK(first.nccl_buffer_bytes == tp + dp + world + p2p);
  CHECK(runtime_memory(c, l, 1).nccl_buffer_bytes == tp + dp + world + 2 * p2p);  // two neighbours
  CHECK(first.cublas_workspace_bytes == 2 * 32 * kMiB);  // Hopper's workspace, two handles
  CHECK(first.cuda_context_bytes == c.device.reserved_bytes());
}

TEST_CASE("CPU ranks have no NCCL or cuBLAS, and the estimate names every runtime item",
          "[memory][runtime]") {
  const Cluster cpu = test::preset_cluster("local-cpu", 1);
  const RuntimeMemory r = runtime_memory(cpu, test::layout(2, 4, 2, 1), 0);
  CHECK(r.nccl_buffer_bytes == 0);
  CHECK(r.cublas_workspace_bytes == 0);
  CHECK(r.total() == cpu.device.reserved_bytes());

  const Estimate e = estimate(test::preset_model("llama3-8b"), test::preset_cluster("dgx-h100", 1),
                              test::training(64, 4096), test::layout(8, 64, 2, 1));
  const RankMemory& m = e.memory();
  CHECK(m.runtime_reserved_bytes == m.runtime.total());
  CHECK(m.runtime.nccl_buffer_bytes > 0);
}
