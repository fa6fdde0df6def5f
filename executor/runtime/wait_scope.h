// What a rank's main thread waits in, for the watchdog (watchdog.h): every blocking collective,
// receive and barrier of the CPU backend is marked with a WaitScope, and the CUDA backend's host
// waits on its streams (where a hung NCCL collective holds it). MPI-free, so that the
// interpreter's seam (world_comm.h) can name its waits without naming MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardplan {

enum class WaitKind : int32_t {
  none,  // not waiting: running the step's work
  all_reduce,
  all_gather,
  reduce_scatter,
  broadcast,
  reduce,
  gather,
  barrier,
  recv,
  send,
  device,  // the CUDA backend's host waiting on its streams: kernels and NCCL collectives
};

// What the main thread waits in. Members are world ranks; none (empty) means every rank.
struct WaitSite {
  WaitKind kind = WaitKind::none;
  std::string group;         // "tp", "dp", "embedding", "world", "pipeline"
  std::vector<int> members;  // who must arrive; for recv and send, the peer
  int64_t sequence = 0;      // the group's n-th collective on this rank, from 1 (0: none)
};

// Marks the main thread as waiting in `site` for its lifetime, with the running Watchdog (none: a
// no-op, as in tests that run ranks without one).
class WaitScope {
 public:
  explicit WaitScope(WaitSite site);
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;
};

// The training step the rank is in, for the report (from 1, as execute prints steps).
void note_watchdog_step(int64_t step);

}  // namespace shardplan
