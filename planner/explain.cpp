#include "planner/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/human_format.h"
#include "core/schedule.h"
#include "core/stage_split.h"
#include "planner/report.h"

namespace shardplan {

namespace {

// Communication by what it serves: the data-parallel kinds (dp, dp×cp, expert dp) together, so
// that a layout with cp = 1 compares with one whose gradients go over dp×cp.
struct CommKind {
  std::string_view name;
  std::initializer_list<Group> groups;
};
const CommKind kCommKinds[] = {{"tensor-parallel", {Group::tp}},
                               {"context-parallel", {Group::cp}},
                               {"expert-parallel", {Group::ep}},
                               {"data-parallel", {Group::dp, Group::dp_cp, Group::expert_dp}},
                               {"pipeline", {Group::pp}}};

bool serves(const CommKind& k, const CollectiveEstimate& c) {
  return std::find(k.groups.begin(), k.groups.end(), c.action.group) != k.groups.end();
}

double exposed_in(const Estimate& e, const CommKind& k) {
  double s = 0;
  for (const CollectiveEstimate& c : e.collectives)
    if (serves(k, c)) s += c.exposed_s;
  return s;
}

// The collective of that kind that leaves the most time exposed.
const CollectiveEstimate* dominant(const Estimate& e, const CommKind& k) {
  const CollectiveEstimate* best = nullptr;
  for (const CollectiveEstimate& c : e.collectives)
    if (serves(k, c) && (!best || c.exposed_s > best->exposed_s)) best = &c;
  return best;
}

std::string signed_seconds(double s) {
  return fmt::format("{}{}", s < 0 ? '-' : '+', format_seconds(std::abs(s)));
}

std::string ratio_text(double part, double whole) {
  if (part > 0 && whole / part >= 2) return fmt::format("1/{:.0f}", whole / part);
  return format_percent(whole > 0 ? part / whole : 0);
}

// "tp all_reduce spans 2 nodes on infiniband at 47.1 GB/s busbw, 1/9 of the 421.0 GB/s it gets on
// nvlink"
std::string comm_detail(const Estimate& loser, const Estimate& winner, const CommKind& k) {
  const CollectiveEstimate* l = dominant(loser, k);
  if (!l) return "";
  std::string s =
      fmt::format("{} spans {} node{} on {} at {:.1f} GB/s busbw", l->name(), l->span.nodes,
                  l->span.nodes == 1 ? "" : "s", l->level_name, l->cost.busbw_GBps);
  const CollectiveEstimate* w = dominant(winner, k);
  if (w && w->level_name != l->level_name)
    s += fmt::format(", {} of the {:.1f} GB/s it gets on {}",
                     ratio_text(l->cost.busbw_GBps, w->cost.busbw_GBps), w->cost.busbw_GBps,
                     w->level_name);
  return s;
}

// One kind of operation's FLOPs and time over the step (StepTime::compute_s: every micro-batch's
// forward, backward and weight gradients on the slowest stage).
struct KindStep {
  double flops = 0;
  double time_s = 0;
};

KindStep kind_step(const Estimate& e, OpKind k) {
  const PassCost* passes[] = {&e.compute.forward, &e.compute.backward, &e.compute.weight_grad};
  double microbatch_s = 0;
  KindStep one;
  for (const PassCost* p : passes) {
    microbatch_s += p->time_s();
    one.flops += (*p)[k].flops;
    one.time_s += (*p)[k].time_s;
  }
  if (microbatch_s == 0) return {};
  const double microbatches = e.time.compute_s / microbatch_s;
  return {microbatches * one.flops, microbatches * one.time_s};
}

// Which kind of operation the extra compute comes from: more work on the slowest stage, or the
// same work at a lower rate.
std::string compute_detail(const Estimate& lo, const Estimate& wi) {
  OpKind worst = OpKind::matmul;
  double worst_delta = -1;
  for (const auto& [kind, name] : kOpKindNames) {
    const double delta = kind_step(lo, kind).time_s - kind_step(wi, kind).time_s;
    if (delta > worst_delta) worst = kind, worst_delta = delta;
  }
  const KindStep l = kind_step(lo, worst), w = kind_step(wi, worst);
  if (worst == OpKind::memory_bound)
    return fmt::format("memory-bound kernels (norms, activations, residuals) {}",
                       signed_seconds(worst_delta));
  const std::string_view name = enum_name(worst, kOpKindNames);
  std::string s = fmt::format("{} {}", name, signed_seconds(worst_delta));
  if (w.flops > 0 && l.flops > 1.005 * w.flops)
    s += fmt::format(": its slowest stage does {} more {} FLOPs per step",
                     format_percent(l.flops / w.flops - 1), name);
  const double rate_l = l.flops / l.time_s / 1e12,
               rate_w = w.time_s > 0 ? w.flops / w.time_s / 1e12 : 0;
  if (rate_l < 0.995 * rate_w)
    s += fmt::format(", at {:.3g} TFLOP/s per device against {:.3g}", rate_l, rate_w);
  return s;
}

// One part of the step and what it costs the loser more than the winner.
struct StepPart {
  std::string name;
  double delta_s = 0;
  std::function<std::string()> detail;
};

std::vector<StepPart> parts_of(const Estimate& lo, const Estimate& wi) {
  const StepTime &l = lo.time, &w = wi.time;
  std::vector<StepPart> parts{
      {"compute", l.compute_s - w.compute_s, [&] { return compute_detail(lo, wi); }},
      {"recompute", l.recompute_s - w.recompute_s,
       [&] {
         return fmt::format("re-running the forward takes {}", format_seconds(l.recompute_s));
       }},
      {"pipeline bubble", l.bubble_s - w.bubble_s,
       [&] {
         return fmt::format("{} of the pipeline against {}", format_percent(lo.bubble_fraction),
                            format_percent(wi.bubble_fraction));
       }},
      {"optimizer step", l.optimizer_s - w.optimizer_s, [] { return std::string(); }},
      {"interference", l.interference_s - w.interference_s,
       [] { return std::string("compute slowed by the communication it hides"); }},
  };
  for (const CommKind& k : kCommKinds)
    parts.push_back({fmt::format("exposed {} communication", k.name),
                     exposed_in(lo, k) - exposed_in(wi, k),
                     [&lo, &wi, &k] { return comm_detail(lo, wi, k); }});
  return parts;
}

}  // namespace

std::string value_text(const Alternative& a) {
  if (a.field == "recompute")
    return "recompute=" + std::string(enum_name(static_cast<Recompute>(a.value), kRecomputeNames));
  if (a.field == "schedule")
    return "schedule=" + std::string(enum_name(static_cast<Schedule>(a.value), kScheduleNames));
  return fmt::format("{}={}", a.field, a.value);
}

namespace {

// The runner-up and the best layouts one value away from the winner's on each field, nearest in
// objective first, each layout once.
std::vector<std::pair<std::string, const Ranked*>> nearest(const SearchResult& r, size_t n) {
  std::vector<std::pair<std::string, const Ranked*>> out;
  std::set<int64_t> seen{r.top.front().index};
  if (r.top.size() > 1 && n > 0) {
    out.emplace_back("the runner-up", &r.top[1]);
    seen.insert(r.top[1].index);
  }
  std::vector<const Alternative*> adjacent;
  for (const Alternative& a : r.alternatives)
    if (a.adjacent) adjacent.push_back(&a);
  std::stable_sort(adjacent.begin(), adjacent.end(),
                   [](const Alternative* a, const Alternative* b) {
                     return a->best.objective < b->best.objective;
                   });
  for (const Alternative* a : adjacent) {
    if (out.size() >= n) break;
    if (seen.insert(a->best.index).second) out.emplace_back("with " + value_text(*a), &a->best);
  }
  return out;
}

// "compute 4.10 s, exposed communication 0.55 s, ...": the parts of the step that are not zero.
std::string step_parts(const Estimate& e) {
  const std::pair<const char*, double> parts[] = {
      {"compute", e.time.compute_s},
      {"recompute", e.time.recompute_s},
      {"exposed communication", e.time.microbatch_comm_s + e.time.step_comm_s},
      {"pipeline bubble", e.time.bubble_s},
      {"interference", e.time.interference_s},
      {"optimizer", e.time.optimizer_s}};
  std::string out;
  for (const auto& [name, s] : parts)
    if (s > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, format_seconds(s));
  return out;
}

// Where an uneven split put the layers: the slowest stage against the fastest, each with its
// layers and the model's ends it holds.
std::string split_sentence(const Layout& l, const Estimate& e) {
  const auto& t = e.stage_microbatch_s;
  const auto fastest = static_cast<int>(std::min_element(t.begin(), t.end()) - t.begin());
  const auto stage_text = [&](int stage) {
    int layers = 0;
    for (int chunk = 0; chunk < l.vpp; ++chunk)
      layers += l.stages[static_cast<size_t>(virtual_stage(l, stage, chunk))];
    return fmt::format("stage {} ({} layers{}{})", stage, layers,
                       stage == 0 ? " and the embedding" : "",
                       stage == last_stage_rank(l) ? " and the head and loss" : "");
  };
  const auto at = [&](int stage) { return format_seconds(t[static_cast<size_t>(stage)]); };
  return fmt::format(
      "Its layers split {} over the virtual stages: {} is the slowest at {} per micro-batch, {} "
      "the fastest at {}.",
      split_string(l.stages), stage_text(e.slowest_stage), at(e.slowest_stage), stage_text(fastest),
      at(fastest));
}

}  // namespace

std::string why_slower(const Estimate& loser, const Estimate& winner) {
  const double delta = loser.step_time_s - winner.step_time_s;
  const int64_t lo_peak = loser.memory().reserved_bytes();
  const int64_t wi_peak = winner.memory().reserved_bytes();
  if (delta <= 0 && lo_peak == wi_peak)
    return fmt::format(
        "ties with it ({} per step, {}); the earlier in the search order ranks first",
        format_seconds(winner.step_time_s), format_gib(static_cast<double>(wi_peak)));
  if (delta <= 0)
    return fmt::format("as fast ({} per step) but needs {} against {}",
                       format_seconds(loser.step_time_s), format_gib(static_cast<double>(lo_peak)),
                       format_gib(static_cast<double>(wi_peak)));
  const double percent = 100 * delta / winner.step_time_s;
  std::string s =
      fmt::format("{} per step ({}%, {} against {})", signed_seconds(delta),
                  percent < 1 ? fmt::format("{:+.2g}", percent) : fmt::format("{:+.1f}", percent),
                  format_seconds(loser.step_time_s), format_seconds(winner.step_time_s));
  std::vector<StepPart> parts = parts_of(loser, winner);
  std::stable_sort(parts.begin(), parts.end(),
                   [](const StepPart& a, const StepPart& b) { return a.delta_s > b.delta_s; });
  const auto part_text = [](const StepPart& p) {
    std::string t = p.name + " " + signed_seconds(p.delta_s);
    const std::string detail = p.detail();
    return detail.empty() ? t : t + " (" + detail + ")";
  };
  for (size_t i = 0; i < 2 && parts[i].delta_s > 0.1 * delta; ++i)
    s += (i == 0 ? ": " : "; ") + part_text(parts[i]);
  // What the loser wins back, where it is large enough to explain why the sum of the losses above
  // exceeds the difference (a smaller bubble bought with a smaller micro-batch).
  if (const StepPart& gain = parts.back(); gain.delta_s < -0.1 * delta)
    s += "; it gains back " + part_text(gain);
  return s;
}

std::vector<std::string> explain_ranking(const SearchResult& r, size_t max_alternatives) {
  if (r.top.empty()) return {};
  const Ranked& best = r.top.front();
  const Estimate& e = best.estimate;
  const RankMemory& m = e.memory();
  std::vector<std::string> out;
  out.push_back(fmt::format(
      "{} wins at {} per step ({} MFU, {:.3g} TFLOP/s per device): {}; it uses {} of the {} "
      "a device offers.",
      layout_label(best.layout), format_seconds(e.step_time_s), format_percent(e.mfu),
      e.tflops_per_device, step_parts(e), format_gib(static_cast<double>(m.reserved_bytes())),
      format_gib(static_cast<double>(m.capacity_bytes - m.runtime_reserved_bytes))));
  if (!best.layout.stages.empty()) out.push_back(split_sentence(best.layout, e));
  for (const auto& [what, alt] : nearest(r, max_alternatives))
    out.push_back(
        fmt::format("{} ({}): {}.", what, layout_label(alt->layout), why_slower(alt->estimate, e)));
  return out;
}

}  // namespace shardplan
