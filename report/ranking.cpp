// Sections (1) and (5): the search's ranking and why its winner won, from plan --json.
#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "report/sections.h"

namespace shardplan::report {
namespace {

// One layout of the search as the page shows it; `rank` 0 for an alternative (not in the top).
nlohmann::json layout_row(const nlohmann::json& entry, int rank, const std::string& alternative) {
  const nlohmann::json& p = entry.at("prediction");
  const nlohmann::json& m = p.at("memory");
  return {{"rank", rank},
          {"alternative", alternative},
          {"layout", entry.at("layout")},
          {"step_time_s", p.at("step_time_s")},
          {"mfu", p.at("mfu")},
          {"exposed_comm_s", p.at("exposed_comm_s")},
          {"bubble_fraction", p.at("bubble_fraction")},
          {"reserved_bytes", m.at("reserved_bytes")},
          {"usable_bytes", m.at("capacity_bytes").get<double>() -
                               m.at("runtime_reserved_bytes").get<double>()}};
}

// "tp=1": the field and value an alternative differs from the winner in (plan --json).
std::string alternative_name(const nlohmann::json& a) {
  return a.at("change").get<std::string>();
}

// The top layouts, then the alternatives not among them.
nlohmann::json layout_rows(const nlohmann::json& search) {
  nlohmann::json rows = nlohmann::json::array();
  int rank = 0;
  for (const auto& entry : search.at("top")) rows.push_back(layout_row(entry, ++rank, ""));
  for (const auto& a : search.value("alternatives", nlohmann::json::array())) {
    const bool in_top = std::any_of(rows.begin(), rows.end(), [&](const nlohmann::json& r) {
      return r["layout"] == a.at("layout");
    });
    if (!in_top) rows.push_back(layout_row(a, 0, alternative_name(a)));
  }
  return rows;
}

// A layout is on the frontier when no other is at least as fast and as small, and better in one.
void mark_pareto(nlohmann::json& rows) {
  for (auto& r : rows) {
    const double t = r["step_time_s"], m = r["reserved_bytes"];
    r["pareto"] = std::none_of(rows.begin(), rows.end(), [&](const nlohmann::json& o) {
      const double ot = o["step_time_s"], om = o["reserved_bytes"];
      return ot <= t && om <= m && (ot < t || om < m);
    });
  }
}

const nlohmann::json* first_search(const std::vector<Input>& inputs) {
  const auto searches = inputs_of(inputs, InputKind::search);
  return searches.empty() ? nullptr : &searches.front()->json;
}

}  // namespace

nlohmann::json ranking_section(const std::vector<Input>& inputs) {
  const nlohmann::json* search = first_search(inputs);
  if (!search || search->at("top").empty()) return nullptr;
  nlohmann::json rows = layout_rows(*search);
  mark_pareto(rows);
  nlohmann::json counts = nlohmann::json::object();
  for (const char* key : {"layouts", "fitting", "timed", "bounded", "wall_s"})
    counts[key] = search->at(key);
  return {{"layouts", rows}, {"counts", counts}};
}

nlohmann::json explanation_section(const std::vector<Input>& inputs) {
  const nlohmann::json* search = first_search(inputs);
  if (!search || search->at("top").empty() || !search->contains("explanation")) return nullptr;
  const nlohmann::json rows = layout_rows(*search);
  const double winner_s = rows.front()["step_time_s"];
  nlohmann::json deltas = nlohmann::json::array();
  for (size_t i = 1; i < rows.size(); ++i) {
    const nlohmann::json& r = rows[i];
    const int rank = r["rank"];
    const double step_s = r["step_time_s"];
    deltas.push_back({{"label", rank > 0 ? fmt::format("#{}", rank) : r["alternative"].get<std::string>()},
                      {"layout", r["layout"]},
                      {"delta_s", step_s - winner_s}});
  }
  return {{"winner", rows.front()["layout"]},
          {"sentences", search->at("explanation")},
          {"deltas", deltas}};
}

}  // namespace shardplan::report
