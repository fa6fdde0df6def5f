#include "simulator/comparison.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>

#include "core/action_matching.h"
#include "core/statistics.h"

namespace shardplan {

namespace {

// A step's time on one rank outside its actions: waiting that no action holds, and work the
// rank's timeline does not attribute to an action. Posted sends do not hold a rank: left out.
// `wait`: what each action's timing leaves out of the rank's time in it (a simulated group action
// starts at its group's last arrival, a recv at its send's start).
double outside_actions_s(double step_s, const Program& p, const std::vector<ActionTiming>& t,
                         const std::vector<double>& wait) {
  double busy_s = 0;
  for (size_t a = 0; a < p.actions.size(); ++a)
    if (p.actions[a].kind != ActionKind::send) busy_s += t[a].end_s - t[a].start_s + wait[a];
  return std::max(0.0, step_s - busy_s);
}

// Each action's median over the steps after the warm-up of its rank's wait in it: [rank][action].
std::vector<std::vector<double>> median_partner_wait_s(const Measurement& m) {
  std::vector<std::vector<std::vector<double>>> samples;  // [rank][action][step]
  for (const Program& p : m.programs) samples.emplace_back(p.actions.size());
  const StepMatches matches = match_actions(m.programs);
  for (size_t step = static_cast<size_t>(m.warmup_steps); step < m.timings.size(); ++step) {
    const auto wait = partner_wait_s(m.programs, matches, m.timings[step]);
    for (size_t r = 0; r < wait.size(); ++r)
      for (size_t a = 0; a < wait[r].size(); ++a) samples[r][a].push_back(wait[r][a]);
  }
  std::vector<std::vector<double>> out;
  for (auto& rank : samples) {
    std::vector<double>& medians = out.emplace_back();
    for (std::vector<double>& s : rank) medians.push_back(s.empty() ? 0 : median(std::move(s)));
  }
  return out;
}

MeasuredMemory as_measured(const SimulatedMemory& m) {
  return {m.state.parameters,    m.state.gradients, m.state.optimizer(),
          m.activations_bytes(), m.other_bytes,     m.peak_bytes()};
}

}  // namespace

double relative_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0 : INFINITY;
  return (predicted - measured) / measured;
}

Comparison compare_run(const PlanSimulation& predicted, const Measurement& measured,
                       const std::vector<ProgramGemms>& gemms) {
  const SimResult& sim = predicted.result;
  assert(sim.ok() && sim.ranks_per_program == 1 &&
         predicted.step.programs.size() == measured.programs.size());
  Comparison c;
  c.layout = to_string(measured.plan.layout);
  c.predicted_step_time_s = predicted.step_time_s;
  c.measured_step_time_s = median_step_time_s(measured);
  c.measured_steps = static_cast<int64_t>(measured.steps.size()) - measured.warmup_steps;

  const std::vector<std::vector<double>> medians = median_action_s(measured);
  const std::vector<std::vector<double>> waits = median_partner_wait_s(measured);
  double longest_busy_s = -1;
  double excess_wait_s = 0;  // summed over the ranks
  double step_noise_s = 0;   // summed over the ranks
  for (size_t i = 0; i < predicted.step.programs.size(); ++i) {
    const Program& p = predicted.step.programs[i];
    const size_t rank = static_cast<size_t>(p.rank);
    assert(measured.programs[rank].actions.size() == p.actions.size());
    std::map<std::string, size_t> index;  // name → position in c.kinds
    const size_t first = c.kinds.size();
    double busy_s = 0, parts_s = 0;
    for (size_t a = 0; a < p.actions.size(); ++a) {
      const std::string name = action_kind_name(p.actions[a]);
      const auto [it, fresh] = index.try_emplace(name, c.kinds.size());
      if (fresh) c.kinds.push_back({.rank = p.rank, .name = name});
      KindTime& k = c.kinds[it->second];
      const ActionTiming& t = sim.timings[i][a];
      ++k.actions;
      k.predicted_s += t.end_s - t.start_s + sim.wait_s[i][a];
      k.predicted_wait_s += sim.wait_s[i][a];
      k.measured_s += medians[rank][a];
      k.measured_wait_s += waits[rank][a];
      if (is_group_action(p.actions[a])) excess_wait_s += waits[rank][a] - sim.wait_s[i][a];
      busy_s += medians[rank][a] - waits[rank][a];
      if (p.actions[a].kind != ActionKind::send) parts_s += medians[rank][a];
    }
    std::vector<double> outside;
    const std::vector<double> none(p.actions.size(), 0.0);  // a measured call holds its wait
    for (size_t step = static_cast<size_t>(measured.warmup_steps); step < measured.steps.size();
         ++step)
      outside.push_back(outside_actions_s(measured.steps[step].step_time_s, p,
                                          measured.timings[step][rank], none));
    c.kinds.push_back(
        {.rank = p.rank,
         .name = kOutsideActions,
         .predicted_s = outside_actions_s(predicted.step_time_s, p, sim.timings[i], sim.wait_s[i]),
         .measured_s = median(std::move(outside))});
    step_noise_s += c.measured_step_time_s - parts_s - c.kinds.back().measured_s;
    if (busy_s > longest_busy_s) {
      longest_busy_s = busy_s;
      c.gap_rank = p.rank;
      c.gaps.clear();
      Gap wait{kPartnerWait, 0};
      for (size_t k = first; k < c.kinds.size(); ++k) {
        const KindTime& kt = c.kinds[k];
        c.gaps.push_back({kt.name, (kt.measured_s - kt.measured_wait_s) -
                                       (kt.predicted_s - kt.predicted_wait_s)});
        wait.gap_s += kt.measured_wait_s - kt.predicted_wait_s;
      }
      c.gaps.push_back(wait);
    }
    const RankMemoryComparison m{p.rank, as_measured(predicted.memory[i]), measured.memory[rank]};
    c.predicted_peak_bytes = std::max(c.predicted_peak_bytes, m.predicted.peak_bytes);
    c.measured_peak_bytes = std::max(c.measured_peak_bytes, m.measured.peak_bytes);
    c.memory.push_back(m);
  }
  const std::vector<double> gemm_s = median_gemm_s(measured);
  if (gemms.size() == measured.gemms.size() &&
      std::any_of(gemm_s.begin(), gemm_s.end(), [](double s) { return s > 0; }))
    for (size_t rank = 0; rank < gemms.size(); ++rank)
      c.gemms.push_back({static_cast<int64_t>(rank), gemms[rank].flops,
                         measured.gemms[rank].flops_per_step, gemms[rank].time_s, gemm_s[rank]});
  c.excess_wait_s = excess_wait_s / static_cast<double>(predicted.step.programs.size());
  c.step_noise_s = step_noise_s / static_cast<double>(predicted.step.programs.size());
  std::stable_sort(c.gaps.begin(), c.gaps.end(), [](const Gap& a, const Gap& b) {
    return std::abs(a.gap_s) > std::abs(b.gap_s);
  });
  return c;
}

double Comparison::gemm_time_error() const {
  if (gemms.empty()) return NAN;
  // The measured FLOPs at the predicted rate: GEMMs that are not the cost model's (a run of
  // another executor) are then still compared by their rate.
  double predicted = 0, measured = 0;
  for (const RankGemms& g : gemms) {
    if (g.predicted_flops > 0) predicted += g.predicted_s * g.measured_flops / g.predicted_flops;
    measured += g.measured_s;
  }
  return relative_error(predicted, measured);
}

std::vector<int> ranks_by(const std::vector<double>& values) {
  std::vector<int> ranks;
  for (double v : values)
    ranks.push_back(1 + static_cast<int>(std::count_if(values.begin(), values.end(),
                                                       [v](double w) { return w < v; })));
  return ranks;
}

OrderAgreement order_agreement(const std::vector<double>& predicted,
                               const std::vector<double>& measured,
                               const std::vector<double>& spread) {
  assert(predicted.size() == measured.size() && measured.size() == spread.size());
  OrderAgreement a;
  for (size_t i = 0; i < measured.size(); ++i)
    for (size_t j = 0; j < measured.size(); ++j) {
      if (!(measured[i] + spread[i] + spread[j] < measured[j])) continue;  // i not clearly faster
      ++a.distinguishable_pairs;
      if (predicted[i] < predicted[j])
        ++a.agreeing_pairs;
      else
        a.disagreeing.emplace_back(i, j);
    }
  return a;
}

}  // namespace shardplan
