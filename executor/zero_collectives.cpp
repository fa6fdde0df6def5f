#include "executor/zero_collectives.h"

#include <cassert>
#include <utility>

namespace shardplan {

namespace {

int64_t padded_unit(const ZeroShards& s, size_t u) {
  return s.members * s.piece(u);
}

}  // namespace

void reduce_scatter_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                         std::span<const float> full, float* part) {
  const int64_t n = s.units[u].count(), padded = padded_unit(s, u);
  assert(static_cast<int64_t>(full.size()) == n || static_cast<int64_t>(full.size()) == padded);
  if (static_cast<int64_t>(full.size()) == padded) {
    comm.reduce_scatter_blocks(full.data(), part, s.piece(u));
    return;
  }
  Buffer<float> staged = side_buffer(rt, MemoryCategory::buffers, padded, "padded unit");
  rt.kernels().copy(staged.data(), full.data(), n);
  comm.reduce_scatter_blocks(staged.data(), part, s.piece(u));
  rt.release_after_use(std::move(staged));
}

void all_gather_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                     const float* part, std::span<float> full) {
  const int64_t n = s.units[u].count(), padded = padded_unit(s, u), p = s.piece(u);
  assert(static_cast<int64_t>(full.size()) == n || static_cast<int64_t>(full.size()) == padded);
  if (static_cast<int64_t>(full.size()) == padded) {
    comm.all_gather_blocks(part, full.data(), p);
    return;
  }
  Buffer<float> staged =
      side_buffer(rt, MemoryCategory::buffers, padded, "padded unit", /*for_overwrite=*/true);
  Kernels<float>& dev = rt.kernels();
  dev.copy(staged.data() + s.index * p, part, s.mine(u).count());
  comm.all_gather_blocks(staged.data() + s.index * p, staged.data(), p);
  dev.copy(full.data(), staged.data(), n);
  rt.release_after_use(std::move(staged));
}

void reduce_scatter_add(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                        std::span<const float> full, float* shard) {
  Buffer<float> part = side_buffer(rt, MemoryCategory::buffers, s.piece(u), "reduce-scatter output",
                                   /*for_overwrite=*/true);
  reduce_scatter_unit(rt, comm, s, u, full, part.data());
  rt.kernels().residual_add(shard + s.offsets[u], part.data(), nullptr, 1, part.size());
  rt.release_after_use(std::move(part));
}

}  // namespace shardplan
