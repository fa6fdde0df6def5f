#include "executor/state/zero_collectives.h"

#include <cassert>
#include <utility>

namespace shardplan {

namespace {

int64_t padded_unit(const ZeroShards& s, size_t u) {
  return s.members * s.piece(u);
}

}  // namespace

template <class T>
void reduce_scatter_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                         std::span<const T> full, T* part) {
  const int64_t n = s.units[u].count(), padded = padded_unit(s, u);
  assert(static_cast<int64_t>(full.size()) == n || static_cast<int64_t>(full.size()) == padded);
  if (static_cast<int64_t>(full.size()) == padded) {
    comm.reduce_scatter_blocks(full.data(), part, s.piece(u));
    return;
  }
  Buffer<T> staged = side_buffer<T>(rt, MemoryCategory::buffers, padded, "padded unit");
  rt.kernels<T>().copy(staged.data(), full.data(), n);
  comm.reduce_scatter_blocks(staged.data(), part, s.piece(u));
  rt.release_after_use(std::move(staged));
}

template <class T>
void all_gather_unit(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u, const T* part,
                     std::span<T> full) {
  const int64_t n = s.units[u].count(), padded = padded_unit(s, u), p = s.piece(u);
  assert(static_cast<int64_t>(full.size()) == n || static_cast<int64_t>(full.size()) == padded);
  if (static_cast<int64_t>(full.size()) == padded) {
    comm.all_gather_blocks(part, full.data(), p);
    return;
  }
  Buffer<T> staged =
      side_buffer<T>(rt, MemoryCategory::buffers, padded, "padded unit", /*for_overwrite=*/true);
  Kernels<T>& dev = rt.kernels<T>();
  dev.copy(staged.data() + s.index * p, part, s.mine(u).count());
  comm.all_gather_blocks(staged.data() + s.index * p, staged.data(), p);
  dev.copy(full.data(), staged.data(), n);
  rt.release_after_use(std::move(staged));
}

template <class T>
void reduce_scatter_add(RankRuntime& rt, GroupComm& comm, const ZeroShards& s, size_t u,
                        std::span<const T> full, T* shard) {
  Buffer<T> part = side_buffer<T>(rt, MemoryCategory::buffers, s.piece(u), "reduce-scatter output",
                                  /*for_overwrite=*/true);
  reduce_scatter_unit(rt, comm, s, u, full, part.data());
  rt.kernels<T>().residual_add(shard + s.offsets[u], part.data(), nullptr, 1, part.size());
  rt.release_after_use(std::move(part));
}

#define SHARDPLAN_INSTANTIATE(T)                                                                  \
  template void reduce_scatter_unit<T>(RankRuntime&, GroupComm&, const ZeroShards&, size_t,       \
                                       std::span<const T>, T*);                                   \
  template void all_gather_unit<T>(RankRuntime&, GroupComm&, const ZeroShards&, size_t, const T*, \
                                   std::span<T>);                                                 \
  template void reduce_scatter_add<T>(RankRuntime&, GroupComm&, const ZeroShards&, size_t,        \
                                      std::span<const T>, T*);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

}  // namespace shardplan
