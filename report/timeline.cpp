#include "report/timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "core/schedule.h"

namespace shardplan::report {
namespace {

constexpr double kSecondsPerMicrosecond = 1e-6;
constexpr std::string_view kIdle = "idle";  // the compute stream waiting: bubble, communication

struct Event {
  double start_s = 0, end_s = 0;
  size_t kind = 0;
};

struct Process {
  std::string group;  // "predicted", "measured", or the trace's label
  std::string rank;   // "rank 3", "rank 3 ×32" where it stands for identical ranks
};

struct Lane {
  bool compute = false;  // idle time on it is drawn
  std::vector<Event> events;
};

// "predicted rank 3 (stands for 32 identical ranks)" (simulator/trace.h) -> {"predicted", "rank 3 ×32"}.
Process parse_process(const std::string& name, const std::string& label) {
  Process p{label, name};
  for (const std::string group : {"predicted", "measured"})
    if (name.rfind(group + " ", 0) == 0) p = {group, name.substr(group.size() + 1)};
  const std::string stands_for = " (stands for ";
  const size_t paren = p.rank.find(stands_for);
  if (paren != std::string::npos) {
    const size_t count = paren + stands_for.size();
    p.rank = p.rank.substr(0, paren) + " \u00d7" + p.rank.substr(count, p.rank.find(' ', count) - count);
  }
  return p;
}

// A stream's name: the trace's thread_name, else simulator/trace.h's tid (core/schedule.h).
std::string stream_name(const std::map<std::pair<int64_t, int>, std::string>& names, int64_t pid,
                        int tid) {
  if (auto it = names.find({pid, tid}); it != names.end()) return it->second;
  if (tid >= 0 && tid < kNumStreams) return std::string(enum_name(static_cast<Stream>(tid), kStreamNames));
  return "stream " + std::to_string(tid);
}

using Ranks = std::map<int64_t, std::map<int, Lane>>;  // by pid, then tid

// The group's lanes, groups in the order the trace first names them (predicted, then measured).
Ranks& group_lanes(std::vector<std::pair<std::string, Ranks>>& groups, const std::string& name) {
  for (auto& [group, ranks] : groups)
    if (group == name) return ranks;
  return groups.emplace_back(name, Ranks{}).second;
}

double rounded(double s) { return std::round(s * 1e7) / 1e7; }  // 0.1 us: keeps the page small

size_t kind_index(std::vector<std::string>& kinds, std::string_view kind) {
  auto it = std::find(kinds.begin(), kinds.end(), kind);
  if (it != kinds.end()) return static_cast<size_t>(it - kinds.begin());
  kinds.emplace_back(kind);
  return kinds.size() - 1;
}

void push_bar(nlohmann::json& bars, double start_s, double end_s, size_t kind) {
  bars.push_back({rounded(start_s), rounded(end_s), kind});
}

// Every action as a bar, and on the compute stream the gaps wider than `resolution_s` as idle.
nlohmann::json exact_bars(const Lane& lane, double origin_s, double resolution_s, size_t idle) {
  nlohmann::json bars = nlohmann::json::array();
  double last_end_s = origin_s;
  for (const Event& e : lane.events) {
    if (lane.compute && e.start_s - last_end_s > resolution_s)
      push_bar(bars, last_end_s - origin_s, e.start_s - origin_s, idle);
    push_bar(bars, e.start_s - origin_s, e.end_s - origin_s, e.kind);
    last_end_s = std::max(last_end_s, e.end_s);
  }
  return bars;
}

// A lane of more actions than its share of bars, drawn as a screen would: the span cut into `bins`
// equal slices, each the kind busy for most of it when that is at least half of it (else idle on
// the compute stream, blank on the others), and runs of one kind joined into one bar.
nlohmann::json binned_bars(const Lane& lane, double origin_s, double span_s, size_t bins,
                           size_t kinds, size_t idle) {
  const double width_s = span_s / static_cast<double>(bins);
  std::vector<double> busy_s(bins * kinds, 0.0);
  for (const Event& e : lane.events) {
    const double a = e.start_s - origin_s, b = e.end_s - origin_s;
    const size_t first = std::min(bins - 1, static_cast<size_t>(std::max(0.0, a / width_s)));
    const size_t last = std::min(bins - 1, static_cast<size_t>(std::max(0.0, b / width_s)));
    for (size_t i = first; i <= last; ++i) {
      const double lo = static_cast<double>(i) * width_s, hi = lo + width_s;
      busy_s[i * kinds + e.kind] += std::max(0.0, std::min(b, hi) - std::max(a, lo));
    }
  }
  constexpr size_t kBlank = static_cast<size_t>(-1);
  nlohmann::json bars = nlohmann::json::array();
  size_t run_kind = kBlank, run_start = 0;
  for (size_t i = 0; i <= bins; ++i) {
    size_t kind = lane.compute ? idle : kBlank;
    if (i < bins) {
      const auto first = busy_s.begin() + static_cast<std::ptrdiff_t>(i * kinds);
      const auto most = std::max_element(first, first + static_cast<std::ptrdiff_t>(kinds));
      if (*most >= width_s / 2) kind = static_cast<size_t>(most - first);
    }
    if (i < bins && kind == run_kind) continue;
    if (run_kind != kBlank)
      push_bar(bars, static_cast<double>(run_start) * width_s, static_cast<double>(i) * width_s,
               run_kind);
    run_kind = kind, run_start = i;
  }
  return bars;
}

// A counter's (time, value) points from the group's origin, at most kMaxCounterPoints: past that,
// each equal slice of the step keeps its largest value (the peak is what the line must show).
nlohmann::json counter_points(std::vector<std::pair<double, double>> points, double origin_s,
                              double span_s) {
  std::sort(points.begin(), points.end());
  nlohmann::json out = nlohmann::json::array();
  if (points.size() <= kMaxCounterPoints) {
    for (const auto& [t, v] : points) out.push_back({t - origin_s, v});
    return out;
  }
  std::vector<double> largest(kMaxCounterPoints, -1);
  for (const auto& [t, v] : points) {
    const double at = span_s > 0 ? (t - origin_s) / span_s : 0;
    const auto slice = std::min(kMaxCounterPoints - 1,
                                static_cast<size_t>(at * static_cast<double>(kMaxCounterPoints)));
    largest[slice] = std::max(largest[slice], v);
  }
  for (size_t i = 0; i < kMaxCounterPoints; ++i)
    if (largest[i] >= 0)
      out.push_back({span_s * static_cast<double>(i) / static_cast<double>(kMaxCounterPoints),
                     largest[i]});
  return out;
}

}  // namespace

nlohmann::json timeline_from_trace(const nlohmann::json& trace, const std::string& label,
                                   size_t max_bars) {
  std::map<int64_t, Process> processes;
  std::map<std::pair<int64_t, int>, std::string> streams;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") != "M") continue;
    const std::string name = e.at("args").value("name", "");
    if (e.value("name", "") == "process_name")
      processes[e.at("pid").get<int64_t>()] = parse_process(name, label);
    else if (e.value("name", "") == "thread_name")
      streams[{e.at("pid").get<int64_t>(), e.at("tid").get<int>()}] = name;
  }

  // Lanes by group, then rank, then stream; the kinds in the order met.
  std::vector<std::string> kinds;
  std::vector<std::pair<std::string, Ranks>> groups;
  std::map<int64_t, std::vector<std::pair<double, double>>> held;  // by pid: (time_s, GiB)
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "activations held") {
      held[e.at("pid").get<int64_t>()].emplace_back(
          e.at("ts").get<double>() * kSecondsPerMicrosecond, e.at("args").at("GiB").get<double>());
      continue;
    }
    if (e.value("ph", "") != "X") continue;
    const int64_t pid = e.at("pid").get<int64_t>();
    const int tid = e.at("tid").get<int>();
    const Process& process =
        processes.try_emplace(pid, Process{label, "rank " + std::to_string(pid)}).first->second;
    const std::string stream = stream_name(streams, pid, tid);
    Lane& lane = group_lanes(groups, process.group)[pid][tid];
    lane.compute = stream == "compute";
    // On the compute stream the action's first word (forward, backward, recompute,
    // optimizer_step); elsewhere the stream (tp-comm, dp-comm, pp-comm, ...).
    const std::string name = e.value("name", "");
    const std::string kind = lane.compute ? name.substr(0, name.find(' ')) : stream;
    const double start_s = e.at("ts").get<double>() * kSecondsPerMicrosecond;
    lane.events.push_back(
        {start_s, start_s + e.at("dur").get<double>() * kSecondsPerMicrosecond,
         kind_index(kinds, kind)});
  }
  const size_t idle = kind_index(kinds, kIdle);

  size_t lanes_shown = 0;
  for (const auto& [group, ranks] : groups) {
    size_t shown = 0;
    for (const auto& [pid, lanes] : ranks)
      if (shown++ < kMaxTimelineRanks) lanes_shown += lanes.size();
  }
  const size_t bins = std::max<size_t>(50, max_bars / std::max<size_t>(1, lanes_shown));

  nlohmann::json out{{"groups", nlohmann::json::array()},
                     {"lanes", nlohmann::json::array()},
                     {"activations", nlohmann::json::array()}};
  for (auto& [group, ranks] : groups) {
    double origin_s = INFINITY, end_s = 0;
    for (auto& [pid, lanes] : ranks)
      for (auto& [tid, lane] : lanes)
        for (const Event& e : lane.events)
          origin_s = std::min(origin_s, e.start_s), end_s = std::max(end_s, e.end_s);
    const double span_s = end_s - origin_s;
    out["groups"].push_back({{"label", group},
                             {"span_s", span_s},
                             {"ranks", ranks.size()},
                             {"ranks_shown", std::min(ranks.size(), kMaxTimelineRanks)}});
    size_t shown = 0;
    for (auto& [pid, lanes] : ranks) {
      if (shown++ == kMaxTimelineRanks) break;
      if (auto it = held.find(pid); it != held.end())
        out["activations"].push_back({{"group", group},
                                      {"label", processes[pid].rank},
                                      {"points", counter_points(it->second, origin_s, span_s)}});
      for (auto& [tid, lane] : lanes) {
        std::sort(lane.events.begin(), lane.events.end(),
                  [](const Event& a, const Event& b) { return a.start_s < b.start_s; });
        const bool exact = 2 * lane.events.size() <= bins;
        out["lanes"].push_back(
            {{"group", group},
             {"label", processes[pid].rank + " " + stream_name(streams, pid, tid)},
             {"bars", exact ? exact_bars(lane, origin_s, span_s / static_cast<double>(bins), idle)
                            : binned_bars(lane, origin_s, span_s, bins, kinds.size(), idle)}});
      }
    }
  }
  out["kinds"] = kinds;
  return out;
}

}  // namespace shardplan::report
