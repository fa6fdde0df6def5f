// The collectives (and point-to-point transfer) a training step issues, and nccl-tests' bus
// bandwidth factor for each — defined once here for the schedule, the cost model and the
// benchmarks (nccl-tests doc/PERFORMANCE.md).
#pragma once

#include "core/enum_names.h"

namespace shardplan {

enum class Collective { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv };
inline constexpr EnumNames<Collective, 6> kCollectiveNames{
    {{Collective::all_reduce, "all_reduce"},
     {Collective::reduce_scatter, "reduce_scatter"},
     {Collective::all_gather, "all_gather"},
     {Collective::all_to_all, "all_to_all"},
     {Collective::broadcast, "broadcast"},
     {Collective::send_recv, "send_recv"}}};

// busbw = algbw × factor: 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter, all-gather and
// all-to-all, 1 for broadcast and send/recv (nccl-tests doc/PERFORMANCE.md).
constexpr double bus_bandwidth_factor(Collective c, int n) {
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
      return static_cast<double>(n - 1) / n;
    case Collective::broadcast:
    case Collective::send_recv:
      return 1.0;
  }
  return 0;
}

}  // namespace shardplan
