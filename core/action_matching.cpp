#include "core/action_matching.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <tuple>
#include <unordered_set>

namespace shardplan {

namespace {

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

std::vector<std::vector<double>> partner_wait_s(
    std::span<const Program> programs, const std::vector<std::vector<ActionTiming>>& timings) {
  assert(timings.size() == programs.size());
  std::vector<std::vector<double>> wait;
  for (size_t i = 0; i < programs.size(); ++i) wait.emplace_back(programs[i].actions.size(), 0.0);
  for (const std::vector<ActionRef>& members : collective_instances(programs)) {
    double last_s = 0;
    for (const ActionRef m : members)
      last_s = std::max(last_s, timings[m.program][m.action].start_s);
    for (const ActionRef m : members)
      wait[m.program][m.action] = last_s - timings[m.program][m.action].start_s;
  }
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> posted_s;  // (from, to, tag) → start
  for (size_t i = 0; i < programs.size(); ++i)
    for (size_t j = 0; j < programs[i].actions.size(); ++j) {
      const Action& a = programs[i].actions[j];
      if (a.kind == ActionKind::send)
        posted_s[{programs[i].rank, a.peer, a.tag}] = timings[i][j].start_s;
    }
  for (size_t i = 0; i < programs.size(); ++i)
    for (size_t j = 0; j < programs[i].actions.size(); ++j) {
      const Action& a = programs[i].actions[j];
      if (a.kind != ActionKind::recv) continue;
      const auto it = posted_s.find({a.peer, programs[i].rank, a.tag});
      if (it != posted_s.end()) wait[i][j] = std::max(0.0, it->second - timings[i][j].start_s);
    }
  return wait;
}

}  // namespace shardplan
