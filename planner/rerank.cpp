// Re-ranking by simulation.
#include "planner/rerank.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/human_format.h"
#include "planner/report.h"
#include "simulator/plan_simulation.h"

namespace shardplan {

std::vector<Resimulated> rerank_by_simulation(const Model& m, const Cluster& c, const Training& t,
                                              const std::vector<Ranked>& top, Objective o) {
  std::vector<Resimulated> out;
  for (size_t i = 0; i < top.size(); ++i) {
    const Ranked& k = top[i];
    const int64_t actions = simulated_actions(m, t, k.layout, true);
    if (actions > kMaxRerankActions) {
      out.push_back({k, static_cast<int>(i + 1), actions, false, k.estimate.step_time_s,
                     k.objective, k.estimate.memory().peak_bytes(), k.estimate.fits});
      continue;
    }
    const PlanSimulation s = simulate_plan(m, c, t, k.layout, k.estimate.options, true);
    if (!s.result.ok())
      continue;  // a schedule that cannot finish is a bug the simulate tests catch
    // The objective of the estimate, its time-dependent figures replaced by the simulation's.
    Estimate simulated = k.estimate;
    simulated.step_time_s = s.step_time_s;
    simulated.tokens_per_s = s.tokens_per_s;
    out.push_back({k, static_cast<int>(i + 1), actions, true, s.step_time_s,
                   objective_value(o, simulated, c, t), s.memory[s.worst_memory].peak_bytes(),
                   s.fits});
  }
  std::stable_sort(out.begin(), out.end(), [](const Resimulated& a, const Resimulated& b) {
    if (a.fits != b.fits) return a.fits;
    return a.objective < b.objective;
  });
  return out;
}

std::string format_rerank(const std::vector<Resimulated>& r, bool wide) {
  if (r.empty()) return "";
  size_t width = 6;
  for (const Resimulated& k : r) width = std::max(width, layout_label(k.ranked.layout).size());
  std::string out = "simulated event by event, the same layouts:\n";
  out += wide ? fmt::format("{:>3}  {:<{}}  {:>6}  {:>10}  {:>10}  {:>7}  {:>12}\n", "#", "layout",
                            width, "search", "estimate", "simulated", "diff", "memory (GiB)")
              : fmt::format("{:>3}  {:>6}  {:>10}  {:>10}  {:>7}  {:>12}  {}\n", "#", "search",
                            "estimate", "simulated", "diff", "memory (GiB)", "layout");
  std::string unsimulated;
  for (size_t i = 0; i < r.size(); ++i) {
    const Resimulated& k = r[i];
    const double estimate_s = k.ranked.estimate.step_time_s;
    const std::string label = layout_label(k.ranked.layout);
    const std::string simulated = k.simulated ? format_seconds(k.step_time_s) : "-";
    const std::string diff =
        k.simulated ? fmt::format("{:+.1f}%", (k.step_time_s / estimate_s - 1) * 100) : "-";
    const std::string memory =
        k.simulated
            ? fmt::format("{:.1f}", static_cast<double>(k.peak_bytes) / (1024.0 * 1024 * 1024))
            : "-";
    const std::string fit = k.fits ? "" : "  does not fit";
    if (!k.simulated)
      unsimulated += fmt::format("{}#{} ({} actions)", unsimulated.empty() ? "" : ", ",
                                 k.search_rank, format_count(static_cast<double>(k.actions)));
    if (wide) {
      out += fmt::format("{:>3}  {:<{}}  {:>6}  {:>10}  {:>10}  {:>7}  {:>12}{}\n", i + 1, label,
                         width, fmt::format("#{}", k.search_rank), format_seconds(estimate_s),
                         simulated, diff, memory, fit);
      continue;
    }
    out += row_with_wrapped_last(fmt::format("{:>3}  {:>6}  {:>10}  {:>10}  {:>7}  {:>12}  ", i + 1,
                                             fmt::format("#{}", k.search_rank),
                                             format_seconds(estimate_s), simulated, diff, memory),
                                 label + (k.fits ? "" : " (does not fit)"));
  }
  if (!unsimulated.empty()) {
    const std::string note = fmt::format(
        "not simulated, above the {} actions the re-rank simulates (shardplan simulate takes "
        "each alone): {}",
        format_count(static_cast<double>(kMaxRerankActions)), unsimulated);
    out += paragraph(note, wide, 0);
  }
  const Resimulated& best = r.front();
  const auto first =
      std::find_if(r.begin(), r.end(), [](const Resimulated& k) { return k.search_rank == 1; });
  if (!best.simulated)
    out += fmt::format("the search's #{} keeps its place unsimulated\n", best.search_rank);
  else if (best.search_rank == 1)
    out += "the simulation keeps the search's first layout\n";
  else if (first != r.end())
    out += fmt::format(
        "the simulation puts the search's #{} first: {} per step against {} for the search's "
        "first\n",
        best.search_rank, format_seconds(best.step_time_s), format_seconds(first->step_time_s));
  return out;
}

}  // namespace shardplan
