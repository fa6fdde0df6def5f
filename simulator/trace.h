// Timelines of a step as Chrome trace JSON (ui.perfetto.dev, chrome://tracing): one process per
// rank, one thread per stream, one complete ("X") event per action, named by action_name, for
// simulated and measured runs alike (docs/conventions.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

// {"traceEvents": [...]}: process_name / thread_name metadata, then for every action of every
// program an event {"name", "ph": "X", "ts", "dur" (µs), "pid": rank, "tid": stream,
// "args": {micro_batch, chunk, bytes, ...}}. `timings[i][j]` times programs[i].actions[j].
// `ranks_per_program` > 1 marks programs that stand for identical peers (simulated symmetry).
// Processes are named "<label> rank R" with pid R + pid_offset, so that two timelines of the same
// ranks (predicted and measured) can share one file.
struct TraceProcesses {
  std::string label;  // "" or "predicted", "measured"
  int64_t pid_offset = 0;
};
struct RankStats;  // simulator/step_stats.h
// With `activations` (per program, as SimResult::ranks holds them), each rank also gets a counter
// track "activations held" ("ph": "C"; GiB and micro-batch chunks alive, at every change), so that
// the trace shows where the memory peaks against the passes that make and free it.
nlohmann::json chrome_trace(const std::vector<Program>& programs,
                            const std::vector<std::vector<ActionTiming>>& timings,
                            int64_t ranks_per_program = 1, const TraceProcesses& processes = {},
                            const std::vector<RankStats>* activations = nullptr);

}  // namespace shardplan
