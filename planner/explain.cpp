#include "planner/explain.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/human_format.h"
#include "planner/report.h"

namespace shardplan {

namespace {

constexpr Group kGroups[] = {Group::tp, Group::cp, Group::ep, Group::dp, Group::expert_dp, Group::dp_cp, Group::pp};

double exposed_in(const Estimate& e, Group g) {
  double s = 0;
  for (const CollectiveEstimate& c : e.collectives)
    if (c.call.group == g) s += c.exposed_s;
  return s;
}

// The collective of group g that leaves the most time exposed.
const CollectiveEstimate* dominant(const Estimate& e, Group g) {
  const CollectiveEstimate* best = nullptr;
  for (const CollectiveEstimate& c : e.collectives)
    if (c.call.group == g && (!best || c.exposed_s > best->exposed_s)) best = &c;
  return best;
}

std::string ratio_text(double part, double whole) {
  if (part > 0 && whole / part >= 2) return fmt::format("1/{:.0f}", whole / part);
  return format_percent(whole > 0 ? part / whole : 0);
}

// "tp_all_reduce spans 2 nodes on infiniband at 47.1 GB/s busbw, 1/9 of the 421.0 GB/s it gets on nvlink"
std::string comm_detail(const Estimate& loser, const Estimate& winner, Group g) {
  const CollectiveEstimate* l = dominant(loser, g);
  if (!l) return "";
  std::string s = fmt::format("{} spans {} node{} on {} at {:.1f} GB/s busbw", l->call.name, l->span.nodes,
                              l->span.nodes == 1 ? "" : "s", l->level_name, l->cost.busbw_GBps);
  const CollectiveEstimate* w = dominant(winner, g);
  if (w && w->level_name != l->level_name)
    s += fmt::format(", {} of the {:.1f} GB/s it gets on {}", ratio_text(l->cost.busbw_GBps, w->cost.busbw_GBps),
                     w->cost.busbw_GBps, w->level_name);
  return s;
}

double matmul_tflops(const Estimate& e) {
  const KindCost& k = e.compute.forward[OpKind::matmul];
  return k.time_s > 0 ? k.flops / k.time_s / 1e12 : 0;
}

// One part of the step and what it costs the loser more than the winner.
struct Part {
  std::string name;
  double delta_s = 0;
  std::function<std::string()> detail;
};

std::vector<Part> parts_of(const Estimate& lo, const Estimate& wi) {
  const StepTime &l = lo.time, &w = wi.time;
  std::vector<Part> parts{
      {"compute", l.compute_s - w.compute_s,
       [&] {
         return fmt::format("its matmuls run at {:.0f} TFLOP/s against {:.0f}", matmul_tflops(lo), matmul_tflops(wi));
       }},
      {"recompute", l.recompute_s - w.recompute_s,
       [&] { return fmt::format("re-running the forward takes {}", format_seconds(l.recompute_s)); }},
      {"pipeline bubble", l.bubble_s - w.bubble_s,
       [&] {
         return fmt::format("{} of the pipeline against {}", format_percent(lo.bubble_fraction),
                            format_percent(wi.bubble_fraction));
       }},
      {"optimizer step", l.optimizer_s - w.optimizer_s, [] { return std::string(); }},
  };
  for (Group g : kGroups)
    parts.push_back({fmt::format("exposed {} communication", enum_name(g, kGroupNames)),
                     exposed_in(lo, g) - exposed_in(wi, g), [&lo, &wi, g] { return comm_detail(lo, wi, g); }});
  return parts;
}

std::string value_text(const Alternative& a) {
  if (a.field == "recompute") return "recompute=" + std::string(enum_name(static_cast<Recompute>(a.value), kRecomputeNames));
  if (a.field == "schedule") return "schedule=" + std::string(enum_name(static_cast<Schedule>(a.value), kScheduleNames));
  return fmt::format("{}={}", a.field, a.value);
}

// The runner-up and the best layouts one value away from the winner's on each field, nearest in
// objective first, each layout once.
std::vector<std::pair<std::string, const Ranked*>> nearest(const SearchResult& r, size_t n) {
  std::vector<std::pair<std::string, const Ranked*>> out;
  if (r.top.size() > 1) out.emplace_back("the runner-up", &r.top[1]);
  std::vector<const Alternative*> adjacent;
  for (const Alternative& a : r.alternatives)
    if (a.adjacent) adjacent.push_back(&a);
  std::stable_sort(adjacent.begin(), adjacent.end(), [](const Alternative* a, const Alternative* b) {
    return a->best.objective < b->best.objective;
  });
  std::set<int64_t> seen{r.top.front().index};
  if (r.top.size() > 1) seen.insert(r.top[1].index);
  for (const Alternative* a : adjacent) {
    if (out.size() >= n) break;
    if (seen.insert(a->best.index).second) out.emplace_back("with " + value_text(*a), &a->best);
  }
  return out;
}

}  // namespace

std::string why_slower(const Estimate& loser, const Estimate& winner) {
  const double delta = loser.step_time_s - winner.step_time_s;
  std::string s = fmt::format("{:+.1f}% step time ({} against {})", 100 * delta / winner.step_time_s,
                              format_seconds(loser.step_time_s), format_seconds(winner.step_time_s));
  if (delta <= 0)
    return s + fmt::format(", and it needs {} against {}", format_gib(static_cast<double>(loser.memory().peak_bytes())),
                           format_gib(static_cast<double>(winner.memory().peak_bytes())));
  std::vector<Part> parts = parts_of(loser, winner);
  std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.delta_s > b.delta_s; });
  for (size_t i = 0; i < 2 && parts[i].delta_s > 0.1 * delta; ++i) {
    s += fmt::format("{} {} {}", i == 0 ? ":" : ";", parts[i].name, fmt::format("{:+.3g} s", parts[i].delta_s));
    const std::string detail = parts[i].detail();
    if (!detail.empty()) s += " (" + detail + ")";
  }
  return s;
}

std::vector<std::string> explain_ranking(const SearchResult& r, size_t max_alternatives) {
  if (r.top.empty()) return {};
  const Ranked& best = r.top.front();
  const Estimate& e = best.estimate;
  const RankMemory& m = e.memory();
  std::vector<std::string> out;
  out.push_back(fmt::format(
      "{} wins at {} per step ({} MFU, {:.0f} TFLOP/s per device): compute {}, recompute {}, exposed "
      "communication {}, pipeline bubble {}, optimizer {}; it uses {} of the {} a device offers.",
      layout_label(best.layout), format_seconds(e.step_time_s), format_percent(e.mfu), e.tflops_per_device,
      format_seconds(e.time.compute_s), format_seconds(e.time.recompute_s),
      format_seconds(e.time.microbatch_comm_s + e.time.step_comm_s), format_seconds(e.time.bubble_s),
      format_seconds(e.time.optimizer_s), format_gib(static_cast<double>(m.peak_bytes())),
      format_gib(static_cast<double>(m.capacity_bytes - m.runtime_reserved_bytes))));
  for (const auto& [what, alt] : nearest(r, max_alternatives))
    out.push_back(fmt::format("{} ({}): {}.", what, layout_label(alt->layout), why_slower(alt->estimate, e)));
  return out;
}

}  // namespace shardplan
