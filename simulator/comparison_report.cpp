#include "simulator/comparison_report.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

#include "core/human_format.h"

namespace shardplan {

namespace {

using MemoryItem = std::pair<const char*, int64_t MeasuredMemory::*>;
constexpr std::array<MemoryItem, 6> kMemoryItems{{
    {"parameters", &MeasuredMemory::parameters_bytes},
    {"gradients", &MeasuredMemory::gradients_bytes},
    {"optimizer", &MeasuredMemory::optimizer_bytes},
    {"activations", &MeasuredMemory::activations_bytes},
    {"other", &MeasuredMemory::other_bytes},
    {"peak", &MeasuredMemory::peak_bytes},
}};

std::string mib(int64_t bytes) {
  return format_mib(static_cast<double>(bytes));
}

std::string error_text(double predicted, double measured) {
  const double e = relative_error(predicted, measured);
  return std::isfinite(e) ? format_signed_percent(e) : "-";
}

}  // namespace

nlohmann::json comparison_row_json(const Comparison& c) {
  nlohmann::json row{{"layout", c.layout},
                     {"predicted_step_time_s", c.predicted_step_time_s},
                     {"measured_step_time_s", c.measured_step_time_s},
                     {"step_time_error", c.step_time_error()},
                     {"predicted_peak_bytes", c.predicted_peak_bytes},
                     {"measured_peak_bytes", c.measured_peak_bytes},
                     {"peak_error", c.peak_error()}};
  if (!std::isnan(c.gemm_time_error())) row["gemm_time_error"] = c.gemm_time_error();
  row["excess_wait_s"] = c.excess_wait_s;
  row["step_noise_s"] = c.step_noise_s;
  return row;
}

nlohmann::json comparison_to_json(const Comparison& c) {
  nlohmann::json actions = nlohmann::json::array();
  for (const KindTime& k : c.kinds)
    actions.push_back({{"rank", k.rank},
                       {"name", k.name},
                       {"actions", k.actions},
                       {"predicted_s", k.predicted_s},
                       {"measured_s", k.measured_s},
                       {"predicted_wait_s", k.predicted_wait_s},
                       {"measured_wait_s", k.measured_wait_s}});
  nlohmann::json memory = nlohmann::json::array();
  for (const RankMemoryComparison& m : c.memory)
    for (const auto& [item, field] : kMemoryItems)
      memory.push_back({{"rank", m.rank},
                        {"item", item},
                        {"predicted_bytes", m.predicted.*field},
                        {"measured_bytes", m.measured.*field}});
  nlohmann::json gemms = nlohmann::json::array();
  for (const RankGemms& g : c.gemms)
    gemms.push_back({{"rank", g.rank},
                     {"predicted_flops", g.predicted_flops},
                     {"measured_flops", g.measured_flops},
                     {"predicted_s", g.predicted_s},
                     {"measured_s", g.measured_s}});
  nlohmann::json gaps = nlohmann::json::array();
  for (const Gap& g : c.gaps) gaps.push_back({{"name", g.name}, {"gap_s", g.gap_s}});
  return {{"rows", nlohmann::json::array({comparison_row_json(c)})},
          {"measured_steps", c.measured_steps},
          {"actions", actions},
          {"gemms", gemms},
          {"memory", memory},
          {"gap_rank", c.gap_rank},
          {"gaps", gaps}};
}

std::string format_comparison_table(const Comparison& c, bool wide) {
  std::string out =
      fmt::format("{:<34} {:>12} {:>12} {:>8}\n", "", "predicted", "measured", "error");
  out +=
      fmt::format("{:<34} {:>12} {:>12} {:>8}\n",
                  fmt::format("step time (median of {} steps)", c.measured_steps),
                  format_seconds(c.predicted_step_time_s), format_seconds(c.measured_step_time_s),
                  format_signed_percent(c.step_time_error()));
  out += fmt::format("{:<34} {:>12} {:>12} {:>8}\n", "peak memory (worst rank)",
                     mib(c.predicted_peak_bytes), mib(c.measured_peak_bytes),
                     format_signed_percent(c.peak_error()));

  out += '\n';
  out += paragraph(
      "Time per step by action kind and rank (measured: each action's median, summed; waiting: in "
      "a collective until its group's last rank arrived, in a recv until its message was sent)",
      wide);
  // Narrow: without the count of actions (in the JSON) and with tighter figures, to fit
  // kTableColumns.
  const auto row = [&](std::string_view rank, std::string_view action, std::string_view actions,
                       std::string_view predicted, std::string_view measured,
                       std::string_view error) {
    return wide ? fmt::format("  {:>4}  {:<34} {:>7} {:>12} {:>12} {:>8}", rank, action, actions,
                              predicted, measured, error)
                : fmt::format("  {:>4}  {:<30} {:>9} {:>9} {:>7}", rank, action, predicted,
                              measured, error);
  };
  const auto waits = [&](std::string_view predicted, std::string_view measured,
                         std::string_view error) {
    return wide ? fmt::format(" {:>12} {:>12} {:>8}", predicted, measured, error)
                : fmt::format(" {:>9} {:>9} {:>8}", predicted, measured, error);
  };
  out += row("rank", "action", "actions", "predicted", "measured", "error") +
         waits("waiting", "waiting", "error") + "\n";
  out += row("", "", "", "", "", "") + waits("predicted", "measured", "w/o wait") + "\n";
  for (const KindTime& k : c.kinds) {
    out += row(std::to_string(k.rank), k.name, std::to_string(k.actions),
               format_seconds(k.predicted_s), format_seconds(k.measured_s),
               error_text(k.predicted_s, k.measured_s));
    if (k.predicted_wait_s > 0 || k.measured_wait_s > 0)
      out += waits(format_seconds(k.predicted_wait_s), format_seconds(k.measured_wait_s),
                   error_text(k.predicted_s - k.predicted_wait_s, k.measured_s - k.measured_wait_s));
    out += "\n";
  }

  if (!c.gemms.empty()) {
    out +=
        "\nGEMMs in the compute actions per step (measured: timed around each call, each rank's "
        "median)\n";
    out += fmt::format("  {:>4}  {:>10} {:>10} {:>12} {:>12} {:>8} {:>9} {:>9}\n", "rank", "GFLOP",
                       "", "predicted", "measured", "error", "GFLOP/s", "GFLOP/s");
    out += fmt::format("  {:>4}  {:>10} {:>10} {:>12} {:>12} {:>8} {:>9} {:>9}\n", "", "predicted",
                       "measured", "", "", "", "predicted", "measured");
    for (const RankGemms& g : c.gemms)
      out += fmt::format("  {:>4}  {:>10.3f} {:>10.3f} {:>12} {:>12} {:>8} {:>9.1f} {:>9.1f}\n",
                         g.rank, g.predicted_flops * 1e-9, g.measured_flops * 1e-9,
                         format_seconds(g.predicted_s), format_seconds(g.measured_s),
                         error_text(g.predicted_s, g.measured_s),
                         g.predicted_s > 0 ? g.predicted_flops / g.predicted_s * 1e-9 : 0.0,
                         g.measured_s > 0 ? g.measured_flops / g.measured_s * 1e-9 : 0.0);
  }

  out += "\nMemory at the peak by rank\n";
  out += fmt::format("  {:>4}  {:<12} {:>12} {:>12} {:>8}\n", "rank", "item", "predicted",
                     "measured", "error");
  for (const RankMemoryComparison& m : c.memory)
    for (const auto& [item, field] : kMemoryItems)
      out += fmt::format("  {:>4}  {:<12} {:>12} {:>12} {:>8}\n", m.rank, item,
                         mib(m.predicted.*field), mib(m.measured.*field),
                         error_text(static_cast<double>(m.predicted.*field),
                                    static_cast<double>(m.measured.*field)));

  const double step_gap_s = c.measured_step_time_s - c.predicted_step_time_s;
  out += fmt::format(
      "\nWhere the time went differently (rank {}, the longest measured; measured - predicted per "
      "step)\n  {:<34} {:>1}{:>11}\n",
      c.gap_rank, "the step", step_gap_s >= 0 ? "+" : "", format_seconds(step_gap_s));
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < c.gaps.size() && i < kShown; ++i)
    out += fmt::format("  {:<34} {:>1}{:>11}\n", c.gaps[i].name, c.gaps[i].gap_s >= 0 ? "+" : "",
                       format_seconds(c.gaps[i].gap_s));
  out += fmt::format("Noise inside the steps: {} ({} of the step; mean over the ranks)\n",
                     format_seconds(c.step_noise_s),
                     format_signed_percent(c.step_noise_s / c.measured_step_time_s));
  const std::string noise =
      "the measured median step less the sum of its parts' medians, of which the cost model, "
      "pricing medians, carries only the profile's noise";
  out += paragraph(noise, wide, 2, 2);
  return out;
}

}  // namespace shardplan
