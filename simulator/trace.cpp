// Chrome trace JSON for a step's timelines.
#include "simulator/trace.h"

#include <cassert>

#include "simulator/step_stats.h"

namespace shardplan {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

nlohmann::json metadata(const char* what, int64_t pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

nlohmann::json action_args(const Action& a) {
  nlohmann::json args = nlohmann::json::object();
  if (a.micro_batch >= 0) args["micro_batch"] = a.micro_batch;
  if (a.chunk >= 0) args["chunk"] = a.chunk;
  if (a.pass != Pass::none) args["pass"] = enum_name(a.pass, kPassNames);
  if (a.kind == ActionKind::compute || is_group_action(a)) {
    args["layers"] = {a.layer_begin, a.layer_end};
    if (a.parts != 0) args["parts"] = parts_name(a.parts);
  }
  if (is_group_action(a)) {
    args["op"] = enum_name(a.op, kCollectiveNames);
    args["group"] = enum_name(a.group, kGroupNames);
  }
  if (a.peer >= 0) args["peer"] = a.peer;
  if (a.tag >= 0) args["tag"] = a.tag;
  if (a.bytes > 0) args["bytes"] = a.bytes;
  if (a.params > 0) args["params"] = a.params;
  return args;
}

// Chrome's trace viewer colours an event by its reserved colour name: forward, backward (the
// input gradient under a split backward), weight gradient and re-forward each in their own, so
// that the W filling a zero-bubble schedule's bubble shows (Perfetto colours by name instead).
const char* compute_colour(Pass p) {
  switch (p) {
    case Pass::forward:
      return "good";
    case Pass::backward:
      return "rail_response";
    case Pass::weight_grad:
      return "yellow";
    case Pass::recompute:
      return "olive";
    case Pass::none:
      break;
  }
  return "generic_work";
}

}  // namespace

nlohmann::json chrome_trace(const std::vector<Program>& programs,
                            const std::vector<std::vector<ActionTiming>>& timings,
                            int64_t ranks_per_program, const TraceProcesses& processes,
                            const std::vector<RankStats>* activations) {
  assert(programs.size() == timings.size());
  nlohmann::json events = nlohmann::json::array();
  for (const Program& p : programs) {
    const int64_t pid = p.rank + processes.pid_offset;
    std::string process = processes.label.empty() ? "" : processes.label + " ";
    process += "rank " + std::to_string(p.rank);
    if (ranks_per_program > 1)
      process += " (stands for " + std::to_string(ranks_per_program) + " identical ranks)";
    events.push_back(metadata("process_name", pid, 0, process));
    for (const auto& [stream, name] : kStreamNames)
      events.push_back(metadata("thread_name", pid, static_cast<int>(stream), std::string(name)));
  }
  for (size_t i = 0; i < programs.size(); ++i) {
    const Program& p = programs[i];
    assert(timings[i].size() == p.actions.size());
    for (size_t j = 0; j < p.actions.size(); ++j) {
      const Action& a = p.actions[j];
      const ActionTiming& t = timings[i][j];
      events.push_back({{"name", action_name(a)},
                        {"cat", enum_name(a.kind, kActionKindNames)},
                        {"ph", "X"},
                        {"ts", t.start_s * kMicrosecondsPerSecond},
                        {"dur", (t.end_s - t.start_s) * kMicrosecondsPerSecond},
                        {"pid", p.rank + processes.pid_offset},
                        {"tid", static_cast<int>(a.stream)},
                        {"args", action_args(a)}});
      if (a.kind == ActionKind::compute) events.back()["cname"] = compute_colour(a.pass);
    }
  }
  if (activations != nullptr) {
    assert(activations->size() == programs.size());
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    for (size_t i = 0; i < programs.size(); ++i)
      for (const ActivationPoint& a : (*activations)[i].activations)
        events.push_back({{"name", "activations held"},
                          {"ph", "C"},
                          {"ts", a.time_s * kMicrosecondsPerSecond},
                          {"pid", programs[i].rank + processes.pid_offset},
                          {"args",
                           {{"GiB", static_cast<double>(a.bytes) / kGiB},
                            {"micro-batch chunks", a.chunks}}}});
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

}  // namespace shardplan
