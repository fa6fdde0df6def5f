#include "core/action_matching.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace shardplan {

namespace {

// A message: sender, receiver, tag.
struct MessageKey {
  int64_t from, to, tag;
  bool operator==(const MessageKey&) const = default;
};
struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const {
    uint64_t h = static_cast<uint64_t>(k.from) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(k.to) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(k.tag) + 0x94D049BB133111EBull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// Group kinds, and the tied-embedding group apart from them.
int group_code(const Action& a) {
  return a.kind == ActionKind::grad_reduce && a.group == Group::pp
             ? static_cast<int>(kGroupNames.size())
             : static_cast<int>(a.group);
}

}  // namespace

std::vector<std::vector<ActionRef>> collective_instances(std::span<const Program> programs) {
  std::unordered_set<int64_t> ranks;
  for (const Program& p : programs) ranks.insert(p.rank);
  std::map<std::tuple<int, int64_t, int64_t>, size_t> index;  // (group, first member, k)
  std::vector<std::vector<ActionRef>> out;
  for (size_t i = 0; i < programs.size(); ++i) {
    const Program& p = programs[i];
    std::map<int, int64_t> issued;  // by group code: a rank's group of a kind is always the same
    for (uint32_t j = 0; j < p.actions.size(); ++j) {
      const Action& a = p.actions[j];
      if (!is_group_action(a)) continue;
      const std::vector<int64_t>& members = p.members(a);
      const int64_t present = std::count_if(members.begin(), members.end(),
                                            [&](int64_t r) { return ranks.count(r) > 0; });
      const int code = group_code(a);
      const int64_t k = issued[code]++;
      if (present < 2) continue;
      const auto [it, fresh] = index.try_emplace({code, members.front(), k}, out.size());
      if (fresh) out.emplace_back();
      out[it->second].push_back({i, j});
    }
  }
  return out;
}

std::vector<std::pair<ActionRef, ActionRef>> recv_sends(std::span<const Program> programs) {
  std::unordered_map<MessageKey, ActionRef, MessageKeyHash> sends;
  for (size_t i = 0; i < programs.size(); ++i)
    for (uint32_t j = 0; j < programs[i].actions.size(); ++j) {
      const Action& a = programs[i].actions[j];
      if (a.kind == ActionKind::send) sends[{programs[i].rank, a.peer, a.tag}] = {i, j};
    }
  std::vector<std::pair<ActionRef, ActionRef>> out;
  for (size_t i = 0; i < programs.size(); ++i)
    for (uint32_t j = 0; j < programs[i].actions.size(); ++j) {
      const Action& a = programs[i].actions[j];
      if (a.kind != ActionKind::recv) continue;
      const auto it = sends.find({a.peer, programs[i].rank, a.tag});
      if (it != sends.end()) out.emplace_back(ActionRef{i, j}, it->second);
    }
  return out;
}

StepMatches match_actions(std::span<const Program> programs) {
  return {collective_instances(programs), recv_sends(programs)};
}

std::vector<std::vector<double>> partner_wait_s(
    std::span<const Program> programs, const StepMatches& matches,
    const std::vector<std::vector<ActionTiming>>& timings) {
  assert(timings.size() == programs.size());
  std::vector<std::vector<double>> wait;
  for (size_t i = 0; i < programs.size(); ++i) wait.emplace_back(programs[i].actions.size(), 0.0);
  const auto at = [&](ActionRef r) -> const ActionTiming& { return timings[r.program][r.action]; };
  const auto set = [&](ActionRef r, double s) {
    wait[r.program][r.action] = std::clamp(s, 0.0, at(r).end_s - at(r).start_s);
  };
  for (const std::vector<ActionRef>& members : matches.collectives) {
    double last_s = 0;
    for (const ActionRef m : members) last_s = std::max(last_s, at(m).start_s);
    for (const ActionRef m : members) set(m, last_s - at(m).start_s);
  }
  for (const auto& [recv, send] : matches.messages) set(recv, at(send).start_s - at(recv).start_s);
  return wait;
}

}  // namespace shardplan
