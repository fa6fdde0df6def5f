// Simulating a plan: build, price, simulate, and derive the estimate's figures from the timeline.
#include "simulator/plan_simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "core/error.h"
#include "core/schedule_fold.h"
#include "simulator/cost_model_pricer.h"
#include "simulator/model_flops.h"

namespace shardplan {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

SimulatedMemory simulated_memory(const Program& p, const RankStats& s, const RankMemory& model) {
  SimulatedMemory m;
  m.rank = p.rank;
  m.stage = p.coord.pp;
  m.state = model.state;
  m.peak_activation_chunks = s.peak_activation_chunks;
  m.chunk_activations_bytes = s.peak_activation_bytes;
  m.peak_activation_s = s.peak_activation_s;
  m.peak_micro_batch = s.peak_micro_batch;
  m.peak_chunk = s.peak_chunk;
  m.recompute_working_bytes = model.recompute_working_bytes;
  m.other_bytes = model.other_bytes();
  m.allocator_cache_bytes = model.allocator_cache_bytes;
  m.runtime_reserved_bytes = model.runtime_reserved_bytes;
  m.capacity_bytes = model.capacity_bytes;
  return m;
}

void fill_figures(PlanSimulation& s, const Layout& l) {
  const SimResult& r = s.result;
  const Estimate& e = s.estimate;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankMemory& model = e.stages[static_cast<size_t>(s.step.programs[i].coord.pp)];
    s.memory.push_back(simulated_memory(s.step.programs[i], r.ranks[i], model));
    if (s.memory[i].reserved_bytes() > s.memory[s.worst_memory].reserved_bytes())
      s.worst_memory = i;
    if (r.ranks[i].busy_s > r.ranks[s.busiest].busy_s) s.busiest = i;
    s.fits = s.fits && s.memory[i].fits();
  }
  s.step_time_s = r.step_time_s;
  const double world = static_cast<double>(l.world());
  s.tokens_per_s = static_cast<double>(e.tokens_per_step) / r.step_time_s;
  s.tflops_per_device = e.model_flops_per_step / r.step_time_s / world / 1e12;
  s.mfu = e.model_flops_per_step / (r.step_time_s * world * e.peak_flops_per_device);
  s.hfu = e.hardware_flops_per_step / (r.step_time_s * world * e.peak_flops_per_device);
  const RankStats& busiest = r.ranks[s.busiest];
  s.bubble_fraction = busiest.bubble_s / r.step_time_s;
  s.exposed_comm_s = busiest.exposed_comm_s;
  s.interference_s = r.interference_s[s.busiest];
}

}  // namespace

CriticalPathSummary summarize_critical_path(const StepPrograms& step, const SimResult& r) {
  CriticalPathSummary out;
  std::map<std::string, size_t> index;
  for (const CriticalAction& c : r.critical_path) {
    const Program& p = step.programs[c.program];
    const Action& a = p.actions[c.action];
    const auto [it, fresh] = index.try_emplace(action_kind_name(a), out.by_name.size());
    if (fresh) out.by_name.push_back({it->first, a.stream, 0, 0});
    ++out.by_name[it->second].actions;
    out.by_name[it->second].on_path_s += c.on_path_s;
    if (out.ranks.empty() || out.ranks.back() != p.rank) out.ranks.push_back(p.rank);
  }
  out.actions = static_cast<int64_t>(r.critical_path.size());
  std::stable_sort(out.by_name.begin(), out.by_name.end(),
                   [](const CriticalPathEntry& a, const CriticalPathEntry& b) {
                     return a.on_path_s > b.on_path_s;
                   });
  return out;
}

int64_t simulated_actions(const Model& m, const Training& t, const Layout& l,
                          bool exploit_symmetry) {
  const int64_t programs_per_stage = exploit_symmetry ? 1 : l.world() / l.pp;
  int64_t actions = 0;
  for (int stage = 0; stage < l.pp; ++stage)
    for (const FoldedAction& f : fold_program(m, t, l, rank_of(l, RankCoord{0, 0, 0, 0, stage})))
      actions += f.per_microbatch * l.num_microbatches + f.per_step;
  return actions * programs_per_stage;
}

PlanSimulation simulate_plan(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                             const ExecutionOptions& x, bool exploit_symmetry) {
  const int64_t actions = simulated_actions(m, t, l, exploit_symmetry);
  if (actions > kMaxSimulatedActions)
    throw InputError(
        "simulate", "",
        fmt::format("the step has {} actions to simulate, more than the {} a simulation holds",
                    actions, kMaxSimulatedActions),
        "estimate prices the same program folded; or simulate fewer micro-batches (--gbs)");
  PlanSimulation s;
  s.estimate = estimate(m, c, t, l, x);
  const auto t0 = std::chrono::steady_clock::now();
  s.step = build_step(m, t, l, exploit_symmetry);
  const CostModelPricer pricer(m, c, t, l, x, s.step);
  s.build_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  s.result = simulate(s.step, pricer, x.streams);
  s.simulate_s = seconds_since(t1);
  if (s.result.ok()) fill_figures(s, l);
  return s;
}

void require_finished(const SimResult& r) {
  if (r.ok()) return;
  std::string what = "the simulated step did not finish";
  if (!r.errors.empty())
    what += ": " + r.errors.front();
  else
    what += ": rank " + std::to_string(r.deadlock.front().rank) + " (" +
            std::string(enum_name(r.deadlock.front().stream, kStreamNames)) + ") waits for " +
            r.deadlock.front().waiting_for;
  throw std::logic_error(what);
}

}  // namespace shardplan
