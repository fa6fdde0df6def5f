// A measurement made by hand for the comparison and refit tests: a gpt-tiny plan on the local CPU
// simulated rank by rank as the CPU executor runs it, and a Measurement whose every action took the
// simulated time scaled by a factor per action kind (what an executor "measured"), so expected
// results follow by arithmetic.
#pragma once

#include <functional>
#include <string>

#include "core/measurement.h"
#include "core/presets.h"
#include "simulator/execution_options.h"
#include "simulator/plan_simulation.h"
#include "tests/simulator/simulator_fixtures.h"

namespace shardplan::test {

inline Plan tiny_cpu_plan(const std::string& layout) {
  Plan p;
  p.model = preset_model("gpt-tiny");
  p.cluster = load_cluster("local-cpu", std::nullopt);
  p.training = with_compute_dtype(training(4, 64), Dtype::fp32);
  p.layout = resolve_layout(parse_layout_string(layout), p.model, p.cluster, p.training, "test");
  return p;
}

inline PlanSimulation simulate_every_rank(const Plan& p, const Profile* profile = nullptr) {
  ExecutionOptions x = cpu_executor_options();
  x.profile = profile;
  return simulate_plan(p.model, p.cluster, p.training, p.layout, x, false);
}

// `steps` steps (the first one warm-up), each action lasting its simulated time × scale(action)
// and starting where the previous one on its rank ended; memory as the simulation predicts it.
inline Measurement scaled_measurement(const Plan& p, const PlanSimulation& s, int steps,
                                      const std::function<double(const Action&)>& scale) {
  Measurement m;
  m.plan = p;
  m.programs = s.step.programs;
  m.warmup_steps = 1;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<ActionTiming>> ranks;
    double slowest = 0;
    for (size_t r = 0; r < m.programs.size(); ++r) {
      std::vector<ActionTiming>& t = ranks.emplace_back();
      double at = 0;
      for (size_t i = 0; i < m.programs[r].actions.size(); ++i) {
        const ActionTiming& sim = s.result.timings[r][i];
        const double d = (sim.end_s - sim.start_s) * scale(m.programs[r].actions[i]);
        t.push_back({at, at + d});
        at += d;
      }
      slowest = std::max(slowest, at);
    }
    m.timings.push_back(std::move(ranks));
    m.steps.push_back({step + 1, 5.0, slowest * (1 + 0.01 * step), 1.0});
  }
  for (const SimulatedMemory& sm : s.memory)
    m.memory.push_back({sm.state.parameters, sm.state.gradients, sm.state.optimizer(),
                        sm.activations_bytes(), sm.other_bytes, sm.peak_bytes()});
  return m;
}

}  // namespace shardplan::test
