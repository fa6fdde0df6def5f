// Timelines of a step as Chrome trace JSON (ui.perfetto.dev, chrome://tracing): one process per
// rank, one thread per stream, one complete ("X") event per action, named by action_name, for
// simulated and measured runs alike (shared/CONVENTIONS.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

// When one action of a program ran, in seconds from the start of the step.
struct ActionTiming {
  double start_s = 0;
  double end_s = 0;
};

// {"traceEvents": [...]}: process_name / thread_name metadata, then for every action of every
// program an event {"name", "ph": "X", "ts", "dur" (µs), "pid": rank, "tid": stream,
// "args": {micro_batch, chunk, bytes, ...}}. `timings[i][j]` times programs[i].actions[j].
// `ranks_per_program` > 1 marks programs that stand for identical peers (simulated symmetry).
nlohmann::json chrome_trace(const std::vector<Program>& programs,
                            const std::vector<std::vector<ActionTiming>>& timings,
                            int64_t ranks_per_program = 1);

}  // namespace shardplan
