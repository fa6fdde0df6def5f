#include "validate/validate_report.h"

#include <fmt/format.h>

#include "core/human_format.h"
#include "core/layout.h"

namespace shardplan {

namespace {

const char* memory_reading_name(MemoryReading r) {
  return r == MemoryReading::nvidia_smi ? "nvidia_smi" : "allocator_reserved";
}

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"count", s.count},
          {"mape_pct", s.mape_pct},
          {"median_abs_pct", s.median_abs_pct},
          {"max_abs_pct", s.max_abs_pct},
          {"signed_mean_pct", s.signed_mean_pct}};
}

nlohmann::json slices_json(const std::vector<SliceScore>& slices) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : slices) {
    nlohmann::json j = stats_json(s.step_time);
    j["dimension"] = s.dimension;
    j["label"] = s.label;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json set_json(const SetScores& s) {
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& r : s.refusals)
    refusals.push_back({{"reason", r.reason}, {"count", r.count}, {"example", r.example}});
  nlohmann::json memory = nullptr;
  if (s.memory) {
    memory = stats_json(*s.memory);
    memory["reading"] = memory_reading_name(s.memory_reading);
  }
  return {{"name", s.name},
          {"framework", s.framework},
          {"measured_field", s.figure_field},
          {"rows", s.rows},
          {"priced_rows", s.priced},
          {"refused_rows", s.refused},
          {"refusals", refusals},
          {"step_time", stats_json(s.step_time)},
          {"step_time_without_pathological", stats_json(s.step_time_without_pathological)},
          {"pathological", slices_json(s.pathological)},
          {"memory", memory},
          {"fits",
           {{"predicted_fits_ran", s.fits.fits_ran},
            {"predicted_fits_crashed", s.fits.fits_crashed},
            {"predicted_no_fit_ran", s.fits.no_fit_ran},
            {"predicted_no_fit_crashed", s.fits.no_fit_crashed},
            {"accuracy", s.fits.accuracy()},
            {"false_fits", s.fits.fits_crashed}}},
          {"planner",
           {{"regret_groups", s.planner.regret_groups},
            {"mean_regret_pct", s.planner.mean_regret_pct},
            {"spearman_groups", s.planner.spearman_groups},
            {"mean_spearman", s.planner.mean_spearman}}},
          {"slices", slices_json(s.slices)}};
}

std::string stats_line(const std::string& what, const ErrorStats& s) {
  if (s.count == 0) return fmt::format("  {:<38} {:>5}\n", what, 0);
  return fmt::format("  {:<38} {:>5} {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>+8.1f}%\n", what, s.count,
                     s.mape_pct, s.median_abs_pct, s.max_abs_pct, s.signed_mean_pct);
}

std::string set_table(const SetScores& s, bool wide) {
  std::string out = fmt::format("{} ({}, {}): {} rows, {} priced, {} refused\n", s.name,
                                s.framework, s.figure_field, s.rows, s.priced, s.refused);
  out += fmt::format("  {:<38} {:>5} {:>8} {:>8} {:>8} {:>9}\n", "step time", "rows", "MAPE",
                     "median", "max", "signed");
  out += stats_line("all", s.step_time);
  if (!s.pathological.empty()) {
    out += stats_line("without pathological slices", s.step_time_without_pathological);
    for (const auto& p : s.pathological) out += stats_line("pathological: " + p.label, p.step_time);
  }
  if (s.memory)
    out += stats_line(s.memory_reading == MemoryReading::nvidia_smi
                          ? "memory (nvidia-smi)"
                          : "memory (max reserved)",
                      *s.memory);
  for (const auto& slice : s.slices)
    out += stats_line(slice.dimension + ": " + slice.label, slice.step_time);
  // Narrow: each sentence cut at a fixed place, not where its counts happen to reach the edge.
  const char* cut = wide ? " " : "\n        ";
  out += fmt::format(
      "  fits: predicted fits & ran {}, fits & crashed {} (false fits),{}no fit & ran {}, "
      "no fit & crashed {}; accuracy {:.1f}%\n",
      s.fits.fits_ran, s.fits.fits_crashed, cut, s.fits.no_fit_ran, s.fits.no_fit_crashed,
      100 * s.fits.accuracy());
  out += fmt::format(
      "  planner: pick regret {:.1f}% (mean of {} groups),{}Spearman {:.2f} (mean of {} groups)\n",
      s.planner.mean_regret_pct, s.planner.regret_groups, wide ? " " : "\n           ",
      s.planner.mean_spearman, s.planner.spearman_groups);
  for (const auto& r : s.refusals)
    out += paragraph(fmt::format("refused {}: {}", r.count, r.reason), wide, 4, 2);
  return out;
}

}  // namespace

nlohmann::json scores_to_json(const std::vector<SetScores>& sets) {
  nlohmann::json out = {{"error_definition", kErrorDefinition}, {"sets", nlohmann::json::array()}};
  for (const auto& s : sets) out["sets"].push_back(set_json(s));
  return out;
}

std::string format_scores_table(const std::vector<SetScores>& sets, bool wide) {
  std::string out = paragraph(kErrorDefinition, wide);
  for (const auto& s : sets) out += fmt::format("\n{}", set_table(s, wide));
  return out;
}

nlohmann::json rows_to_json(const FidelitySet& s, const std::vector<PricedRow>& priced) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const FidelityRow& row = s.rows[i];
    const PricedRow& p = priced[i];
    auto optional = [](const std::optional<double>& v) -> nlohmann::json {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    nlohmann::json j = {{"set", s.name},
                        {"row", row.id},
                        {"group", row.group},
                        {"model", row.model.name},
                        {"devices", row.cluster.world()},
                        {"layout", to_string(row.layout)},
                        {"ran", row.ran},
                        {"measured_step_time_s", optional(row.measured_step_time_s)},
                        {"measured_memory_bytes", optional(row.measured_memory_bytes)},
                        {"pathological", row.pathological}};
    if (!p.refusal.empty()) {
      j["refused"] = p.refusal_detail.empty() ? p.refusal : p.refusal_detail;
    } else {
      j["predicted_step_time_s"] = p.step_time_s;
      j["predicted_memory_bytes"] = predicted_memory_bytes(s, p);
      j["predicted_fits"] = p.fits;
      j["step_time_error"] =
          row.measured_step_time_s ? nlohmann::json(time_error(row, p)) : nlohmann::json(nullptr);
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace shardplan
