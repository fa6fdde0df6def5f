// A plan simulated end to end: its schedule built, priced by the cost model (CostModelPricer),
// simulated event by event, and set beside the closed-form estimate; each simulated rank's memory
// with its activations taken from the simulated timeline. What `shardplan simulate` prints and
// what the planner re-ranks its best candidates by.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/estimate.h"
#include "simulator/event_simulator.h"
#include "simulator/execution_options.h"
#include "simulator/memory_model.h"

namespace shardplan {

// One simulated rank's memory at its peak: model state, buffers and reserve from the memory model
// of its stage, activations from the timeline (the most micro-batch chunks alive at once, plus the
// layer recomputation re-materialises inside a backward).
struct SimulatedMemory {
  int64_t rank = 0;
  int stage = 0;
  ModelStateBytes state;
  int peak_activation_chunks = 0;
  int64_t chunk_activations_bytes = 0;  // simulated peak
  double peak_activation_s = 0;         // when it is first reached, into the step
  int peak_micro_batch = -1;            // by the forward of this micro-batch and chunk
  int peak_chunk = -1;
  int64_t recompute_working_bytes = 0;
  int64_t other_bytes = 0;  // RankMemory::other_bytes: logits, buffers, held gradients
  int64_t allocator_cache_bytes = 0;  // the caching allocator's reserve beyond the peak
  int64_t runtime_reserved_bytes = 0;
  int64_t capacity_bytes = 0;

  int64_t activations_bytes() const { return chunk_activations_bytes + recompute_working_bytes; }
  int64_t peak_bytes() const { return state.total() + activations_bytes() + other_bytes; }
  int64_t reserved_bytes() const { return peak_bytes() + allocator_cache_bytes; }
  bool fits() const { return reserved_bytes() + runtime_reserved_bytes <= capacity_bytes; }
};

// The critical path, summed by what its actions are: action_name without micro-batch and chunk
// ("backward", "tp reduce_scatter", "recv activation").
struct CriticalPathEntry {
  std::string name;
  Stream stream = Stream::compute;
  int64_t actions = 0;
  double on_path_s = 0;
};
struct CriticalPathSummary {
  int64_t actions = 0;
  std::vector<CriticalPathEntry> by_name;  // longest first
  std::vector<int64_t> ranks;              // ranks the path visits, in order, each once per visit
};
CriticalPathSummary summarize_critical_path(const StepPrograms& step, const SimResult& r);

struct PlanSimulation {
  Estimate estimate;  // the closed form, for comparison (and model FLOPs, peak FLOP/s)
  StepPrograms step;
  SimResult result;
  std::vector<SimulatedMemory> memory;  // per program
  size_t worst_memory = 0;              // program with the largest peak
  size_t busiest = 0;                   // program whose compute stream is busy longest
  double build_s = 0;                   // wall time building the programs and the pricer
  double simulate_s = 0;                // wall time of the simulation

  // The figures of estimate(), from the simulated step. bubble_fraction and exposed_comm_s are the
  // busiest rank's (as estimate() reports its slowest stage's): its time idle waiting on other
  // ranks, and its time idle while it communicates.
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_device = 0;
  double mfu = 0;
  double hfu = 0;
  double bubble_fraction = 0;
  double exposed_comm_s = 0;
  double interference_s = 0;  // the busiest rank's compute slowed by what it overlapped
  bool fits = true;           // every simulated rank
};

// The actions a simulation of the step holds, every program's, counted from the folded programs
// (core/schedule_fold.h) without building them; simulate_plan refuses a step past
// kMaxSimulatedActions, where the programs and their timings would take gigabytes.
int64_t simulated_actions(const Model& m, const Training& t, const Layout& l,
                          bool exploit_symmetry);
inline constexpr int64_t kMaxSimulatedActions = 20'000'000;

// Throws what estimate() throws (a dtype the device lacks), and an InputError for a step of more
// than kMaxSimulatedActions actions. The layout must be valid. A schedule
// that deadlocks (a bug) comes back with result.ok() false and no figures.
PlanSimulation simulate_plan(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                             const ExecutionOptions& x, bool exploit_symmetry);

// A schedule that cannot finish, or collectives whose members disagree, is a bug in the schedule:
// std::logic_error naming what the first stuck stream waits for.
void require_finished(const SimResult& r);

}  // namespace shardplan
