#include "executor/runtime/pipeline_channels.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardplan {

namespace {

Direction direction_of(const Action& a) {
  return a.kind == ActionKind::send ? Direction::send : Direction::recv;
}

bool is_p2p(const Action& a) {
  return a.kind == ActionKind::send || a.kind == ActionKind::recv;
}

}  // namespace

std::vector<PipelineChannel> pipeline_channels(const Program& p) {
  std::vector<PipelineChannel> out;
  for (Direction d : {Direction::send, Direction::recv})
    for (Pass pass : {Pass::forward, Pass::backward}) {
      int64_t peer = -1;
      for (const Action& a : p.actions) {
        if (!is_p2p(a) || direction_of(a) != d || a.pass != pass) continue;
        if (peer >= 0 && peer != a.peer)
          throw std::logic_error("rank " + std::to_string(p.rank) +
                                 ": pipeline messages of one direction and pass go to two peers, " +
                                 std::to_string(peer) + " and " + std::to_string(a.peer));
        peer = a.peer;
      }
      if (peer >= 0) out.push_back({d, pass, peer});
    }
  return out;
}

std::vector<int64_t> channel_tags(const Program& p, const PipelineChannel& channel) {
  std::vector<int64_t> tags;
  for (const Action& a : p.actions)
    if (is_p2p(a) && direction_of(a) == channel.direction && a.pass == channel.pass &&
        a.peer == channel.peer)
      tags.push_back(a.tag);
  return tags;
}

}  // namespace shardplan
