#include "planner/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <optional>

#include "core/human_format.h"
#include "core/stage_split.h"
#include "planner/enumerate.h"
#include "simulator/estimate_report.h"

namespace shardplan {

namespace {

// The shape's part of the label: tp, pp, dp and, when not 1, cp and ep.
std::string shape_label(const Layout& l) {
  std::string s = fmt::format("tp={},pp={},dp={}", l.tp, l.pp, l.dp);
  if (l.cp > 1) s += fmt::format(",cp={}", l.cp);
  if (l.ep > 1) s += fmt::format(",ep={}", l.ep);
  return s;
}

std::string gib(int64_t bytes) {
  return format_gib(static_cast<double>(bytes));
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string layout_label(const Layout& l) {
  std::string s = shape_label(l) + fmt::format(",zero={},mbs={}", l.zero, l.micro_batch);
  if (l.sequence_parallel) s += ",sp=1";
  if (l.vpp > 1) s += fmt::format(",vpp={}", l.vpp);
  if (l.recompute != Recompute::none)
    s += fmt::format(",recompute={}", enum_name(l.recompute, kRecomputeNames));
  if (l.schedule != implied_schedule(l.vpp))
    s += fmt::format(",schedule={}", enum_name(l.schedule, kScheduleNames));
  if (l.rank_order != kDefaultRankOrder) s += ",order=" + l.rank_order;
  if (!l.stages.empty()) s += ",stages=" + split_string(l.stages);
  return s;
}

std::string format_counts(const SearchResult& r) {
  const Enumerated& c = r.enumerated;
  const int64_t valid = c.valid;
  // One figure's line each, so that lines fit kTableColumns and none breaks where a time's
  // digits fall.
  std::string out = fmt::format("{} shapes (tp, cp, pp, dp, ep), {} of them invalid\n", c.shapes,
                                c.shapes_invalid);
  out += fmt::format("their {} layouts: {} invalid, {} over device memory, {} fit\n",
                     valid + c.layouts_invalid, c.layouts_invalid, r.pruned_for_memory, r.fitting);
  out += fmt::format("searched {} layouts in {} ({:.0f} layouts/s on {} thread{})\n", valid,
                     format_seconds(r.wall_s), static_cast<double>(valid) / r.wall_s, r.threads,
                     r.threads == 1 ? "" : "s");
  out += fmt::format("of the {} that fit: {} timed in full, {} ruled out by their lower bound\n",
                     r.fitting, r.timed, r.bounded);
  return out;
}

nlohmann::json search_to_json(const SearchResult& r) {
  const Enumerated& c = r.enumerated;
  nlohmann::json top = nlohmann::json::array();
  for (const Ranked& k : r.top)
    top.push_back({{"layout", layout_label(k.layout)},
                   {"objective", k.objective},
                   {"prediction", estimate_to_json(k.estimate)}});
  return {{"shapes", c.shapes},
          {"shapes_invalid", c.shapes_invalid},
          {"layouts", c.valid + c.layouts_invalid},
          {"layouts_invalid", c.layouts_invalid},
          {"pruned_for_memory", r.pruned_for_memory},
          {"fitting", r.fitting},
          {"timed", r.timed},
          {"bounded", r.bounded},
          {"wall_s", r.wall_s},
          {"threads", r.threads},
          {"layouts_per_s", static_cast<double>(c.valid) / r.wall_s},
          {"top", top}};
}

std::string format_top(const SearchResult& r, bool wide) {
  size_t width = 6;
  for (const Ranked& k : r.top) width = std::max(width, layout_label(k.layout).size());
  const auto memory = [](const RankMemory& m) {
    return fmt::format("{:.1f} / {:.1f}", static_cast<double>(m.reserved_bytes()) / kGiB,
                       static_cast<double>(m.capacity_bytes - m.runtime_reserved_bytes) / kGiB);
  };
  // Wide: the layout first and TFLOP/s; else the figures first and the layout last, wrapped at
  // its commas, so that the table fits kTableColumns.
  std::string out =
      wide ? fmt::format("{:>3}  {:<{}}  {:>17}  {:>10}  {:>8}  {:>6}  {:>12}  {:>6}\n", "#",
                         "layout", width, "memory (GiB)", "step time", "TFLOP/s", "MFU",
                         "exposed comm", "bubble")
           : fmt::format("{:>3}  {:>13}  {:>10}  {:>6}  {:>12}  {:>6}  {}\n", "#", "memory (GiB)",
                         "step time", "MFU", "exposed comm", "bubble", "layout");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const Estimate& e = r.top[i].estimate;
    const std::string label = layout_label(r.top[i].layout);
    if (wide) {
      out += fmt::format("{:>3}  {:<{}}  {:>17}  {:>10}  {:>8.3g}  {:>6}  {:>12}  {:>6}\n", i + 1,
                         label, width, memory(e.memory()), format_seconds(e.step_time_s),
                         e.tflops_per_device, format_percent(e.mfu),
                         format_seconds(e.exposed_comm_s), format_percent(e.bubble_fraction));
      continue;
    }
    out += row_with_wrapped_last(
        fmt::format("{:>3}  {:>13}  {:>10}  {:>6}  {:>12}  {:>6}  ", i + 1, memory(e.memory()),
                    format_seconds(e.step_time_s), format_percent(e.mfu),
                    format_seconds(e.exposed_comm_s), format_percent(e.bubble_fraction)),
        label);
  }
  if (!r.top.empty() && r.top.front().estimate.mfu_above_published()) {
    const std::string caution = mfu_caution(r.top.front().estimate);
    out += '\n';
    out += paragraph(std::string_view(caution).substr(0, caution.size() - 1), wide, 11);
  }
  return out;
}

std::string format_rejections(const SearchResult& r) {
  std::string out;
  for (const Rejection& x : r.enumerated.rejections)
    out += fmt::format("invalid  {}: {}: {}\n",
                       x.whole_shape ? shape_label(x.layout) + " (every layout of the shape)"
                                     : layout_label(x.layout),
                       x.field, x.reason);
  for (const MemoryMiss& miss : r.pruned) {
    const RankMemory& m = miss.memory;
    const std::optional<MemoryOverflow> overflow = first_overflow(m);
    assert(overflow);  // a pruned layout's worst stage is over its capacity
    out += fmt::format("memory   {}: {} needs {}, {} free (needs {} of {})\n",
                       layout_label(miss.layout), overflow->item, gib(overflow->needed_bytes),
                       gib(overflow->free_bytes),
                       gib(m.reserved_bytes() + m.runtime_reserved_bytes), gib(m.capacity_bytes));
  }
  return out;
}

Plan chosen_plan(const Model& model, const Cluster& cluster, const Training& training,
                 const Ranked& best) {
  return Plan{model, cluster, training, best.layout, estimate_to_json(best.estimate)};
}

}  // namespace shardplan
