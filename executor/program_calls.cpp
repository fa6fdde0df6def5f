#include "executor/program_calls.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace shardplan {

namespace {

std::string describe_action(const Program& p, size_t index) {
  return fmt::format("rank {}'s action {} ({})", p.rank, index, action_name(p.actions[index]));
}

std::string describe_call(const TimedCall& c) {
  return fmt::format("{} {}", enum_name(c.group, kGroupNames), enum_name(c.op, kCollectiveNames));
}

[[noreturn]] void disagree(const std::string& what) {
  throw std::logic_error("the executor and its program disagree: " + what);
}

}  // namespace

void check_pass_calls(const Program& p, size_t first, size_t last,
                      std::span<const TimedCall> calls) {
  size_t next = 0;
  for (size_t i = first; i < last; ++i) {
    const Action& a = p.actions[i];
    if (a.kind != ActionKind::collective) continue;
    if (next == calls.size())
      disagree(fmt::format("{} moves {} bytes, the layers moved 0 (they called no collective)",
                           describe_action(p, i), a.bytes));
    const TimedCall& c = calls[next++];
    if (c.op != a.op || c.group != a.group || c.bytes != a.bytes)
      disagree(fmt::format("{} moves {} bytes, the layers' {} moved {}", describe_action(p, i),
                           a.bytes, describe_call(c), c.bytes));
  }
  if (next < calls.size())
    disagree(fmt::format("the layers' {} of {} bytes in the pass of {} has no action",
                         describe_call(calls[next]), calls[next].bytes, describe_action(p, first)));
}

void check_moved(const Program& p, size_t index, std::span<const TimedCall> calls) {
  const Action& a = p.actions[index];
  int64_t moved = 0;
  for (const TimedCall& c : calls) {
    if (c.op != a.op)
      disagree(fmt::format("{} is a {}, the executor's {} of {} bytes is not",
                           describe_action(p, index), enum_name(a.op, kCollectiveNames),
                           describe_call(c), c.bytes));
    moved += c.bytes;
  }
  if (moved != a.bytes)
    disagree(fmt::format("{} moves {} bytes, the executor's {} call{} moved {}",
                         describe_action(p, index), a.bytes, calls.size(),
                         calls.size() == 1 ? "" : "s", moved));
}

void check_message(const Program& p, size_t index, int64_t bytes) {
  if (bytes != p.actions[index].bytes)
    disagree(fmt::format("{} moves {} bytes, the message is {}", describe_action(p, index),
                         p.actions[index].bytes, bytes));
}

}  // namespace shardplan
