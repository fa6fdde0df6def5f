// measured.json in and out, and the medians compare and calibrate take from it.
#include "core/measurement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/json_reader.h"
#include "core/statistics.h"

namespace shardplan {

namespace {

std::vector<double> measured_step_times(const Measurement& m) {
  std::vector<double> t;
  for (size_t i = static_cast<size_t>(m.warmup_steps); i < m.steps.size(); ++i)
    t.push_back(m.steps[i].step_time_s);
  return t;
}

nlohmann::json memory_json(const MeasuredMemory& m) {
  return {{"parameters_bytes", m.parameters_bytes}, {"gradients_bytes", m.gradients_bytes},
          {"optimizer_bytes", m.optimizer_bytes},   {"activations_bytes", m.activations_bytes},
          {"other_bytes", m.other_bytes},           {"peak_bytes", m.peak_bytes}};
}

MeasuredMemory read_memory(ObjectReader r) {
  MeasuredMemory m;
  m.parameters_bytes = r.integer("parameters_bytes");
  m.gradients_bytes = r.integer("gradients_bytes");
  m.optimizer_bytes = r.integer("optimizer_bytes");
  m.activations_bytes = r.integer("activations_bytes");
  m.other_bytes = r.integer("other_bytes");
  m.peak_bytes = r.integer("peak_bytes");
  r.reject_unknown();
  return m;
}

StepRecord read_step(ObjectReader r) {
  StepRecord s{r.positive_integer("step"), r.number("loss"), r.positive_number("step_time_s"),
               r.positive_number("tokens_per_s")};
  r.reject_unknown();
  return s;
}

}  // namespace

Measurement merge_runs(const std::vector<Measurement>& runs) {
  assert(!runs.empty());
  Measurement out = runs.front();
  out.steps.clear();
  out.timings.clear();
  out.warmup_steps = 0;
  for (MeasuredGemms& g : out.gemms) g.seconds.clear();
  for (const Measurement& r : runs) {
    assert(r.programs.size() == out.programs.size() && r.gemms.size() == out.gemms.size());
    const auto first = static_cast<size_t>(r.warmup_steps);
    for (size_t i = first; i < r.steps.size(); ++i) {
      StepRecord s = r.steps[i];
      s.step = static_cast<int64_t>(out.steps.size()) + 1;
      out.steps.push_back(s);
      out.timings.push_back(r.timings[i]);
    }
    for (size_t rank = 0; rank < r.gemms.size(); ++rank)
      out.gemms[rank].seconds.insert(out.gemms[rank].seconds.end(),
                                     r.gemms[rank].seconds.begin() + r.warmup_steps,
                                     r.gemms[rank].seconds.end());
    for (size_t rank = 0; rank < r.memory.size(); ++rank)
      if (r.memory[rank].peak_bytes > out.memory[rank].peak_bytes)
        out.memory[rank] = r.memory[rank];
  }
  return out;
}

int64_t warmup_steps(int64_t steps) {
  return steps > kWarmupSteps ? kWarmupSteps : 0;
}

double median_step_time_s(const Measurement& m) {
  return quantile(measured_step_times(m), 0.5);
}

double step_time_spread_s(const Measurement& m) {
  const std::vector<double> t = measured_step_times(m);
  return (quantile(t, 0.75) - quantile(t, 0.25)) / 2;
}

std::vector<double> median_gemm_s(const Measurement& m) {
  std::vector<double> out;
  for (const MeasuredGemms& g : m.gemms) {
    assert(static_cast<int64_t>(g.seconds.size()) > m.warmup_steps);
    out.push_back(median(std::vector<double>(g.seconds.begin() + m.warmup_steps, g.seconds.end())));
  }
  return out;
}

std::vector<std::vector<double>> median_action_s(const Measurement& m) {
  std::vector<std::vector<double>> out;
  for (size_t rank = 0; rank < m.programs.size(); ++rank) {
    std::vector<double>& durations = out.emplace_back();
    for (size_t a = 0; a < m.programs[rank].actions.size(); ++a) {
      std::vector<double> samples;
      for (size_t step = static_cast<size_t>(m.warmup_steps); step < m.timings.size(); ++step) {
        const ActionTiming& t = m.timings[step][rank][a];
        samples.push_back(t.end_s - t.start_s);
      }
      durations.push_back(median(std::move(samples)));
    }
  }
  return out;
}

nlohmann::json measurement_to_json(const Measurement& m) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& s : m.steps)
    steps.push_back({{"step", s.step},
                     {"loss", s.loss},
                     {"step_time_s", s.step_time_s},
                     {"tokens_per_s", s.tokens_per_s}});
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t rank = 0; rank < m.memory.size(); ++rank) {
    nlohmann::json& r = ranks.emplace_back();
    r = {{"rank", rank},
         {"peak_bytes", m.memory[rank].peak_bytes},
         {"memory", memory_json(m.memory[rank])}};
    if (rank < m.gemms.size()) {
      r["gemm_flops_per_step"] = m.gemms[rank].flops_per_step;
      r["gemm_s"] = m.gemms[rank].seconds;
    }
  }
  nlohmann::json actions = nlohmann::json::array();
  for (size_t step = 0; step < m.timings.size(); ++step)
    for (size_t rank = 0; rank < m.programs.size(); ++rank) {
      const std::vector<Action>& program = m.programs[rank].actions;
      for (size_t i = 0; i < program.size(); ++i) {
        const Action& a = program[i];
        const ActionTiming& t = m.timings[step][rank][i];
        actions.push_back({{"step", m.steps[step].step},
                           {"rank", rank},
                           {"name", action_name(a)},
                           {"stream", std::string(enum_name(a.stream, kStreamNames))},
                           {"start_s", t.start_s},
                           {"end_s", t.end_s},
                           {"micro_batch", a.micro_batch},
                           {"chunk", a.chunk},
                           {"bytes", a.bytes}});
      }
    }
  const double median_s = median_step_time_s(m);
  return {
      {"layout", to_string(m.plan.layout)},
      {"plan", plan_to_json(m.plan)},
      {"backend", enum_name(m.backend, kBackendNames)},
      {"warmup_steps", m.warmup_steps},
      {"median_step_time_s", median_s},
      {"median_tokens_per_s", static_cast<double>(m.plan.training.tokens_per_step()) / median_s},
      {"steps", steps},
      {"ranks", ranks},
      {"actions", actions}};
}

Measurement measurement_from_json(const nlohmann::json& j, const std::string& file) {
  ObjectReader r(j, file);
  r.ignore({"layout", "median_step_time_s", "median_tokens_per_s"});  // derived from the rest
  Measurement m;
  m.plan = plan_from_json(r.raw("plan"), file);
  m.backend = enum_field(r, "backend", kBackendNames);
  for (auto& s : r.objects("steps")) m.steps.push_back(read_step(std::move(s)));
  if (m.steps.empty()) r.fail("steps", "no step was measured");
  m.warmup_steps = r.integer("warmup_steps");
  if (m.warmup_steps < 0 || m.warmup_steps >= static_cast<int64_t>(m.steps.size()))
    r.fail("warmup_steps",
           fmt::format("{} leaves none of the {} steps", m.warmup_steps, m.steps.size()));
  const int64_t world = m.plan.layout.world();
  for (int64_t rank = 0; rank < world; ++rank)
    m.programs.push_back(build_program(m.plan.model, m.plan.training, m.plan.layout, rank));
  for (auto& rank : r.objects("ranks")) {
    if (rank.integer("rank") != static_cast<int64_t>(m.memory.size()))
      rank.fail("rank", "ranks must be listed in order from 0");
    rank.integer("peak_bytes");  // repeated inside memory
    m.memory.push_back(read_memory(rank.object("memory")));
    if (rank.has("gemm_flops_per_step") || rank.has("gemm_s")) {
      MeasuredGemms& g = m.gemms.emplace_back();
      g.flops_per_step = rank.number("gemm_flops_per_step");
      if (g.flops_per_step < 0)
        rank.fail("gemm_flops_per_step", fmt::format("{} is negative", g.flops_per_step));
      const nlohmann::json& times = rank.raw("gemm_s");
      if (!times.is_array())
        rank.fail("gemm_s",
                  fmt::format("expected a list of seconds by step, found {}", json_excerpt(times)));
      for (const auto& t : times) {
        if (!t.is_number() || t.get<double>() < 0)
          rank.fail(fmt::format("gemm_s[{}]", g.seconds.size()),
                    fmt::format("{} is not a time in seconds", json_excerpt(t)));
        g.seconds.push_back(t.get<double>());
      }
      if (g.seconds.size() != m.steps.size())
        rank.fail("gemm_s", fmt::format("{} times for {} steps", g.seconds.size(), m.steps.size()));
    }
    rank.reject_unknown();
  }
  if (static_cast<int64_t>(m.memory.size()) != world)
    r.fail("ranks", fmt::format("{} ranks, the plan's layout has {}", m.memory.size(), world));
  if (!m.gemms.empty() && m.gemms.size() != m.memory.size())
    r.fail("ranks", "gemm_flops_per_step and gemm_s on some ranks only");

  // Actions come step by step, rank by rank, in program order.
  m.timings.assign(m.steps.size(), std::vector<std::vector<ActionTiming>>(world));
  size_t step = 0;
  int64_t rank = 0;
  for (auto& a : r.objects("actions")) {
    while (step < m.steps.size() && rank < world &&
           m.timings[step][rank].size() == m.programs[rank].actions.size()) {
      if (++rank == world) rank = 0, ++step;
    }
    if (step == m.steps.size()) a.fail("step", "more actions than the plan's programs have");
    if (a.integer("step") != m.steps[step].step || a.integer("rank") != rank)
      a.fail("rank", fmt::format("expected step {} rank {} here", m.steps[step].step, rank));
    std::vector<ActionTiming>& timings = m.timings[step][rank];
    const Action& expected = m.programs[rank].actions[timings.size()];
    if (a.string("name") != action_name(expected))
      a.fail("name", fmt::format("\"{}\" where rank {}'s program has \"{}\"", a.string("name"),
                                 rank, action_name(expected)));
    const ActionTiming t{a.number("start_s"), a.number("end_s")};
    if (!(std::isfinite(t.start_s) && t.start_s >= 0))
      a.fail("start_s", fmt::format("must be a time >= 0 in seconds, found {}", t.start_s));
    if (!(std::isfinite(t.end_s) && t.end_s >= t.start_s))
      a.fail("end_s", fmt::format("{} is before the action's start_s {}", t.end_s, t.start_s));
    timings.push_back(t);
    a.ignore({"stream", "micro_batch", "chunk", "bytes"});  // the program's
    a.reject_unknown();
  }
  for (size_t s = 0; s < m.steps.size(); ++s)
    for (int64_t k = 0; k < world; ++k)
      if (m.timings[s][k].size() != m.programs[k].actions.size())
        r.fail("actions",
               fmt::format("step {} rank {} has {} of its program's {} actions", m.steps[s].step, k,
                           m.timings[s][k].size(), m.programs[k].actions.size()));
  r.reject_unknown();
  return m;
}

Measurement read_measurement_file(const std::string& path) {
  return measurement_from_json(read_json_file(path), path);
}

}  // namespace shardplan
