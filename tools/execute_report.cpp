#include "tools/execute_report.h"

#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <string>

#include "core/enum_names.h"
#include "simulator/trace.h"

namespace shardplan::cli {

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

nlohmann::json memory_json(const RankMemory& m) {
  return {{"parameters_bytes", m.parameters_bytes}, {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},   {"activations_bytes", m.activations_bytes},
          {"other_bytes", m.other_bytes},           {"peak_bytes", m.peak_bytes}};
}

}  // namespace

std::vector<std::vector<ActionTiming>> gather_timings(const std::vector<ActionTiming>& mine) {
  static_assert(sizeof(ActionTiming) == 2 * sizeof(double));
  const bool root = world_rank() == 0;
  const int n = world_size();
  const int count = static_cast<int>(2 * mine.size());
  std::vector<int> counts(root ? static_cast<size_t>(n) : 0), offsets(counts.size());
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(root ? static_cast<size_t>(offsets.back() + counts.back()) : 0);
  MPI_Gatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
              0, MPI_COMM_WORLD);
  std::vector<std::vector<ActionTiming>> by_rank(counts.size());
  for (size_t r = 0; r < counts.size(); ++r)
    for (int i = 0; i < counts[r]; i += 2) {
      const size_t at = static_cast<size_t>(offsets[r] + i);
      by_rank[r].push_back({all[at], all[at + 1]});
    }
  return by_rank;
}

std::vector<RankMemory> gather_memory(const TensorAllocator& alloc) {
  static_assert(sizeof(RankMemory) == 6 * sizeof(int64_t));
  const MemoryBytes& m = alloc.at_peak();
  const RankMemory mine{m[MemoryCategory::parameters], m[MemoryCategory::gradients],
                        m[MemoryCategory::optimizer],  m[MemoryCategory::activations],
                        m[MemoryCategory::buffers],    alloc.peak_bytes()};
  std::vector<RankMemory> all(world_rank() == 0 ? static_cast<size_t>(world_size()) : 0);
  MPI_Gather(&mine, 6, MPI_INT64_T, all.data(), 6, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return all;
}

double median_step_time_s(const std::vector<StepRecord>& steps) {
  assert(!steps.empty());
  const auto skip = static_cast<std::ptrdiff_t>(steps.size()) > kWarmupSteps ? kWarmupSteps : 0;
  std::vector<double> t;
  for (auto it = steps.begin() + skip; it != steps.end(); ++it) t.push_back(it->step_time_s);
  std::sort(t.begin(), t.end());
  const size_t h = t.size() / 2;
  return t.size() % 2 == 1 ? t[h] : (t[h - 1] + t[h]) / 2;
}

nlohmann::json measured_json(const ExecutionRecord& r) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& s : r.steps)
    steps.push_back({{"step", s.step},
                     {"loss", s.loss},
                     {"step_time_s", s.step_time_s},
                     {"tokens_per_s", s.tokens_per_s}});
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t rank = 0; rank < r.memory.size(); ++rank)
    ranks.push_back({{"rank", rank},
                     {"peak_bytes", r.memory[rank].peak_bytes},
                     {"memory", memory_json(r.memory[rank])}});
  nlohmann::json actions = nlohmann::json::array();
  for (size_t step = 0; step < r.timings.size(); ++step)
    for (size_t rank = 0; rank < r.programs.size(); ++rank) {
      const std::vector<Action>& program = r.programs[rank].actions;
      for (size_t i = 0; i < program.size(); ++i) {
        const Action& a = program[i];
        const ActionTiming& t = r.timings[step][rank][i];
        actions.push_back({{"step", r.steps[step].step},
                           {"name", action_name(a)},
                           {"rank", rank},
                           {"stream", std::string(enum_name(a.stream, kStreamNames))},
                           {"start_s", t.start_s},
                           {"end_s", t.end_s},
                           {"micro_batch", a.micro_batch},
                           {"chunk", a.chunk},
                           {"bytes", a.bytes}});
      }
    }
  const double median_s = median_step_time_s(r.steps);
  return {
      {"layout", to_string(r.plan.layout)},
      {"plan", plan_to_json(r.plan)},
      {"backend", "cpu"},
      {"warmup_steps", std::min<int64_t>(kWarmupSteps, static_cast<int64_t>(r.steps.size()) - 1)},
      {"median_step_time_s", median_s},
      {"median_tokens_per_s", static_cast<double>(r.plan.training.tokens_per_step()) / median_s},
      {"steps", steps},
      {"ranks", ranks},
      {"actions", actions}};
}

nlohmann::json measured_trace(const ExecutionRecord& r) {
  assert(!r.timings.empty());
  return chrome_trace(r.programs, r.timings.back());
}

}  // namespace shardplan::cli
