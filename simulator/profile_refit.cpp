#include "simulator/profile_refit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "core/action_matching.h"
#include "core/alpha_beta_fit.h"
#include "core/error.h"
#include "core/human_format.h"
#include "core/statistics.h"
#include "simulator/cost_model_pricer.h"
#include "simulator/device_efficiency.h"
#include "simulator/execution_options.h"
#include "simulator/parts_compute.h"
#include "simulator/priced_ops.h"

namespace shardplan {

namespace {

// What a priced operation is a rate of: a GEMM shape, or a kernel at a size.
using OpKey = std::tuple<OpKind, int64_t, int64_t, int64_t, MemoryKernel, double>;
OpKey key_of(const PricedOp& op) {
  return op.kind == OpKind::matmul ? OpKey{op.kind, op.m, op.n, op.k, {}, 0}
                                   : OpKey{op.kind, 0, 0, 0, op.kernel, op.elements};
}
double work_of(const PricedOp& op) {  // FLOPs of a GEMM, elements of a kernel
  return op.kind == OpKind::matmul ? gemm_flops(op) : op.elements;
}

struct Rescaled {
  double work = 0;
  double time_s = 0;  // priced time × the measured/predicted ratio of its class
};

using CollectiveKey = std::tuple<Collective, size_t, int, bool>;  // as CollectiveFit's fields

struct RunFit {
  std::map<std::string, ComputeClassFit> classes;
  std::map<OpKey, Rescaled> ops;
  std::map<CollectiveKey, std::map<int64_t, std::vector<double>>> collectives;  // bytes → s
  std::map<size_t, double> link_GBps;                // by level: the cluster's per-device rate
  std::vector<std::pair<double, double>> optimizer;  // params, s
};

// Each rank's measured GEMM time over the cost model's for its program (core/measurement.h's
// MeasuredGemms); empty where the run did not time its GEMMs.
std::vector<double> gemm_ratios(const Measurement& m, const OpTable& table) {
  const std::vector<double> measured = median_gemm_s(m);
  std::vector<double> ratios;
  for (size_t rank = 0; rank < measured.size(); ++rank) {
    const double priced = program_gemms(table, m.programs[rank], m.plan.layout.recompute).time_s;
    if (measured[rank] <= 0 || priced <= 0) return {};
    ratios.push_back(measured[rank] / priced);
  }
  return ratios;
}

void fit_compute(const Measurement& m, const OpTable& table, const CostModelPricer& pricer,
                 const std::vector<std::vector<double>>& medians, RunFit& fit) {
  const Recompute r = m.plan.layout.recompute;
  const auto class_of = [](const Action& a) {
    return fmt::format("{} {}", enum_name(a.pass, kPassNames), parts_name(a.parts));
  };
  // With the run's GEMMs timed apart, its GEMMs take their rank's measured/priced ratio and a
  // class's kernels what is left of its measured time; otherwise every operation of a class
  // takes the class's ratio.
  const std::vector<double> gemm_ratio = gemm_ratios(m, table);
  const auto gemm_scale = [&](size_t rank) {
    return gemm_ratio.empty() ? std::optional<double>{} : gemm_ratio[rank];
  };
  struct Class {
    ComputeClassFit fit;
    double ops_s = 0;            // the price of its operations
    double gemm_measured_s = 0;  // its GEMMs' price × their rank's ratio
    double gemm_s = 0;           // its GEMMs' price
    // The ratio of its kernels (every operation's without timed GEMMs), or nothing where the
    // GEMMs' share leaves the kernels no time (noise): then the class's ratio for all.
    std::optional<double> kernel_ratio() const {
      const double kernels_s = ops_s - gemm_s;
      if (gemm_s == 0 || kernels_s <= 0) return std::nullopt;
      const double left_s = fit.measured_s - gemm_measured_s;
      if (left_s <= 0) return std::nullopt;
      return left_s / kernels_s;
    }
    double class_ratio() const { return ops_s > 0 ? fit.measured_s / ops_s : 1; }
  };
  std::map<std::string, Class> classes;
  for (size_t rank = 0; rank < m.programs.size(); ++rank)
    for (size_t i = 0; i < m.programs[rank].actions.size(); ++i) {
      const Program& p = m.programs[rank];
      const Action& a = p.actions[i];
      if (a.kind != ActionKind::compute) continue;
      Class& c = classes[class_of(a)];
      c.fit.name = class_of(a);
      ++c.fit.actions;
      c.fit.predicted_s += pricer.duration_s(p, a);
      c.fit.measured_s += medians[rank][i];
      for (const PricedOp* o : action_ops(table, a, r)) {
        c.ops_s += o->time_s;
        if (o->kind == OpKind::matmul && gemm_scale(rank)) {
          c.gemm_s += o->time_s;
          c.gemm_measured_s += o->time_s * *gemm_scale(rank);
        }
      }
    }
  for (size_t rank = 0; rank < m.programs.size(); ++rank)
    for (const Action& a : m.programs[rank].actions) {
      if (a.kind != ActionKind::compute) continue;
      const Class& c = classes[class_of(a)];
      // The operations take what was measured beyond the rest of the price.
      const std::optional<double> kernels = c.kernel_ratio();
      for (const PricedOp* o : action_ops(table, a, r)) {
        if (o->kind == OpKind::attention) continue;  // flash attention: no profile entry
        const double ratio = !kernels                    ? c.class_ratio()
                             : o->kind == OpKind::matmul ? *gemm_scale(rank)
                                                         : *kernels;
        Rescaled& s = fit.ops[key_of(*o)];
        s.work += work_of(*o);
        s.time_s += o->time_s * ratio;
      }
    }
  for (const auto& [name, c] : classes) {
    ComputeClassFit& total = fit.classes[name];
    total.name = name;
    total.actions += c.fit.actions;
    total.predicted_s += c.fit.predicted_s;
    total.measured_s += c.fit.measured_s;
  }
}

// A ZeRO reduce-scatter's own memory traffic (grad_reduce_local_bytes), priced at `rates`, is
// taken off its measured time: the pricer adds it back beside the collective.
void fit_communication(const Measurement& m, const Cluster& cluster, const DeviceRates& rates,
                       const std::vector<std::vector<double>>& medians, RunFit& fit) {
  for (const std::vector<ActionRef>& members : collective_instances(m.programs)) {
    const Program& first = m.programs[members.front().program];
    const Action& a = first.actions[members.front().action];
    if (members.size() != first.members(a).size()) continue;  // not every member ran it
    std::vector<double> per_step;
    for (size_t step = static_cast<size_t>(m.warmup_steps); step < m.timings.size(); ++step) {
      double shortest = INFINITY;
      for (const ActionRef r : members) {
        const ActionTiming& t = m.timings[step][r.program][r.action];
        shortest = std::min(shortest, t.end_s - t.start_s);
      }
      per_step.push_back(shortest);
    }
    const GroupSpan span = ranks_span(cluster, a.group, first.members(a));
    const double collective_s =
        median(per_step) - memory_time_s(rates, static_cast<double>(grad_reduce_local_bytes(
                                                    a, m.plan.layout.zero, span.size)));
    if (collective_s <= 0) continue;  // no time left to the collective: nothing to fit
    fit.collectives[{a.op, span.level, span.size, reads_cold_input(a)}][a.bytes].push_back(
        collective_s);
    const InterconnectLevel& level = cluster.levels[span.level];
    fit.link_GBps[span.level] = level.is_scale_out() ? level.nic_GBps : level.bandwidth_GBps;
  }
  for (size_t rank = 0; rank < m.programs.size(); ++rank)
    for (size_t i = 0; i < m.programs[rank].actions.size(); ++i) {
      const Action& a = m.programs[rank].actions[i];
      if (a.kind == ActionKind::optimizer_step && a.params > 0)
        fit.optimizer.emplace_back(static_cast<double>(a.params), medians[rank][i]);
    }
}

// `link_GBps`: the per-device rate of the level the collective spans (the cluster's), the slope a
// collective measured at one size only is given. A cold-input fit the profile lacks starts from
// its warm-input one, so that the sizes the run did not meet keep the sweep's times (a lower
// bound) rather than a line through one or two sizes.
void merge_collective(Profile& p, const CollectiveKey& key,
                      const std::map<int64_t, std::vector<double>>& measured, double link_GBps) {
  const auto& [collective, level, ranks, cold_input] = key;
  const CollectiveFit* found = find_collective_fit(p, collective, level, ranks, cold_input);
  if (!found) {
    const CollectiveFit* warm =
        cold_input ? find_collective_fit(p, collective, level, ranks, false) : nullptr;
    CollectiveFit f = warm ? *warm : CollectiveFit{};
    f.collective = collective, f.level = level, f.ranks = ranks, f.cold_input = cold_input;
    p.collectives.push_back(std::move(f));
    found = &p.collectives.back();
  }
  CollectiveFit* fit = &p.collectives[static_cast<size_t>(found - p.collectives.data())];
  for (const auto& [bytes, times] : measured) {
    std::erase_if(fit->measured, [b = bytes](const CollectivePoint& x) { return x.bytes == b; });
    fit->measured.push_back({bytes, median(times) * 1e6});
  }
  std::sort(fit->measured.begin(), fit->measured.end(),
            [](const CollectivePoint& a, const CollectivePoint& b) { return a.bytes < b.bytes; });
  std::vector<SizeTime> points;
  for (const CollectivePoint& x : fit->measured)
    points.push_back({static_cast<double>(x.bytes), x.time_us * 1e-6});
  if (points.size() >= 2) {
    try {
      const AlphaBeta ab = fit_alpha_beta(points);
      fit->alpha_us = ab.alpha_s * 1e6;
      fit->algbw_GBps = 1 / ab.beta_s_per_byte / 1e9;
      return;
    } catch (const std::runtime_error&) {
      // Times that do not grow with size (in-situ noise): priced as one size, below.
    }
  }
  // One size (or sizes whose times do not grow): it tells the latency, not the rate at which
  // larger sizes grow; that comes from the fit the profile had, or the cluster's link.
  if (fit->algbw_GBps <= 0) fit->algbw_GBps = link_GBps;
  const CollectivePoint& smallest = fit->measured.front();
  fit->alpha_us = std::max(
      0.0, smallest.time_us - static_cast<double>(smallest.bytes) / (fit->algbw_GBps * 1e3));
}

}  // namespace

Profile refit_profile(const Profile* base, const std::vector<Measurement>& runs,
                      const std::vector<std::string>& files, RefitReport* report) {
  RunFit fit;
  Profile out;
  if (base) out = *base;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Measurement& m = runs[i];
    const Plan& plan = m.plan;
    const bool first = i == 0 && !base;
    if (first) {
      out.backend = m.backend;
      out.device = plan.cluster.device.name;
      out.dtype = plan.training.dtype;
      out.memory_GBps = plan.cluster.device.memory_GBps;
    } else if (m.backend != out.backend || plan.training.dtype != out.dtype) {
      throw InputError(
          files[i], "backend",
          fmt::format("ran {} in {}, the profile is {} in {}", enum_name(m.backend, kBackendNames),
                      enum_name(plan.training.dtype, kDtypeNames),
                      enum_name(out.backend, kBackendNames), enum_name(out.dtype, kDtypeNames)),
          "refit runs of one backend and dtype");
    }
    out.ranks = std::max<int>(out.ranks, static_cast<int>(plan.layout.world()));
    const Cluster cluster = base ? apply_profile(plan.cluster, *base, files[i]) : plan.cluster;
    ExecutionOptions x = m.backend == Backend::cpu ? cpu_executor_options() : ExecutionOptions{};
    x.profile = base;
    const DeviceRates rates = device_rates(cluster.device, plan.training.dtype, base);
    const std::vector<std::vector<double>> medians = median_action_s(m);
    const StepPrograms step{m.programs, plan.layout.world(), 1};
    const CostModelPricer pricer(plan.model, cluster, plan.training, plan.layout, x, step);
    fit_compute(m, op_table(plan, rates, x), pricer, medians, fit);
    fit_communication(m, cluster, rates, medians, fit);
  }

  RefitReport r;
  for (const auto& [key, s] : fit.ops) {
    const auto& [kind, mm, nn, kk, kernel, elements] = key;
    if (kind == OpKind::matmul) {
      std::erase_if(out.gemm,
                    [&](const GemmRate& g) { return g.m == mm && g.n == nn && g.k == kk; });
      out.gemm.push_back({mm, nn, kk, s.work / s.time_s / 1e12});
      ++r.gemm_shapes;
    } else {
      std::erase_if(out.kernels, [&](const KernelRate& k) {
        return k.kernel == kernel && k.elements == elements;
      });
      out.kernels.push_back({kernel, elements, s.work / s.time_s});
      ++r.kernel_sizes;
    }
  }
  std::map<double, std::vector<double>> optimizer;  // params → seconds
  for (const auto& [params, s] : fit.optimizer) optimizer[params].push_back(s);
  for (const auto& [params, times] : optimizer) {
    std::erase_if(out.kernels, [&](const KernelRate& k) {
      return k.kernel == MemoryKernel::optimizer_step && k.elements == params;
    });
    out.kernels.push_back({MemoryKernel::optimizer_step, params, params / median(times)});
    ++r.kernel_sizes;
  }
  for (const auto& [key, measured] : fit.collectives) {
    merge_collective(out, key, measured, fit.link_GBps.at(std::get<1>(key)));
    r.collective_sizes += static_cast<int64_t>(measured.size());
  }
  for (const auto& [name, c] : fit.classes) r.compute.push_back(c);
  validate_profile(out, files.empty() ? "refit" : files.front());
  if (report) *report = std::move(r);
  return out;
}

std::string format_refit_report(const RefitReport& r) {
  std::string out = fmt::format("# compute by class: measured against the profile it refits\n");
  size_t width = 5;  // "class"
  for (const ComputeClassFit& c : r.compute) width = std::max(width, c.name.size());
  out += fmt::format("# {:<{}} {:>7} {:>12} {:>12} {:>8}\n", "class", width, "actions", "predicted",
                     "measured", "ratio");
  for (const ComputeClassFit& c : r.compute)
    out += fmt::format("  {:<{}} {:>7} {:>12} {:>12} {:>8.3f}\n", c.name, width, c.actions,
                       format_seconds(c.predicted_s), format_seconds(c.measured_s),
                       c.predicted_s > 0 ? c.measured_s / c.predicted_s : 0.0);
  out += fmt::format(
      "# refitted {} GEMM shapes, {} kernel sizes, {} collective sizes (each instance's shortest "
      "member)\n",
      r.gemm_shapes, r.kernel_sizes, r.collective_sizes);
  return out;
}

}  // namespace shardplan
