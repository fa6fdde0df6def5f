// The one-way links a rank's pipeline messages travel on: each (direction, pass) of its send and
// recv actions has one peer — the next stage's activations out and its gradients in, the previous
// stage's the other way. The CUDA backend gives each link a two-rank NCCL communicator and a
// stream of its own (cuda/nccl_p2p.h), so that, as with MPI's non-blocking sends, no send waits
// behind a receive or the other way round. NCCL matches messages on a link in order, not by tag;
// the programs send them in the order the peer receives them (pipeline_channels_test checks it
// for every layout family).
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

enum class Direction { send, recv };

struct PipelineChannel {
  Direction direction = Direction::send;
  Pass pass = Pass::forward;
  int64_t peer = -1;  // world rank

  bool operator==(const PipelineChannel&) const = default;
};

// The channels of `p`'s send and recv actions, in a fixed order (sends before receives, forward
// before backward). Throws std::logic_error when a (direction, pass) has two peers: the program
// would need links these do not provide.
std::vector<PipelineChannel> pipeline_channels(const Program& p);

// The tags `p` sends (or receives) on `channel`, in program order.
std::vector<int64_t> channel_tags(const Program& p, const PipelineChannel& channel);

}  // namespace shardplan
