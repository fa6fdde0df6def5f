// What `shardplan execute` measured, gathered on rank 0: per-step loss and time, every rank's
// memory at its peak and every timed action, written as measured.json (shared/CONVENTIONS.md) and
// as a Chrome trace with the simulator's event names (simulator/trace.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/plan.h"
#include "core/schedule.h"
#include "executor/interpreter.h"
#include "executor/tensor_allocator.h"

namespace shardplan::cli {

struct StepRecord {
  int64_t step = 0;  // from 1
  double loss = 0;
  double step_time_s = 0;
  double tokens_per_s = 0;
};

// A rank's memory at its total's peak (TensorAllocator::at_peak); buffers are other_bytes.
struct RankMemory {
  int64_t parameters_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes = 0,
          other_bytes = 0, peak_bytes = 0;
};

struct ExecutionRecord {
  Plan plan;
  std::vector<Program> programs;  // every rank's, by rank
  std::vector<StepRecord> steps;
  std::vector<std::vector<std::vector<ActionTiming>>> timings;  // [step][rank][action]
  std::vector<RankMemory> memory;                               // by rank
};

// Steps whose times the medians leave out: the first step pays for first-touch page faults and the
// allocator's cache filling (executor/tensor_allocator.h).
inline constexpr int64_t kWarmupSteps = 1;

// Collective over MPI_COMM_WORLD: every rank's timings of one step, on rank 0 by rank (empty
// elsewhere).
std::vector<std::vector<ActionTiming>> gather_timings(const std::vector<ActionTiming>& mine);

// Collective over MPI_COMM_WORLD: every rank's memory, on rank 0 by rank (empty elsewhere).
std::vector<RankMemory> gather_memory(const TensorAllocator& alloc);

// The median step time of the steps after the warm-up (of every step when there are no others).
double median_step_time_s(const std::vector<StepRecord>& steps);

// measured.json: steps, ranks, actions (every step's, with its step), layout, plan, and the
// medians after warm-up.
nlohmann::json measured_json(const ExecutionRecord& r);

// The last step's timeline.
nlohmann::json measured_trace(const ExecutionRecord& r);

}  // namespace shardplan::cli
