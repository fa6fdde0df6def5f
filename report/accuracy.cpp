// Section (4): predicted against measured, as scatters of [predicted, measured, group, label]
// points (report.js adds the y = x line, the error band and the errors' histogram).
#include <string>

#include "report/sections.h"

namespace shardplan::report {
namespace {

struct Scatter {
  std::string title, unit;  // unit: "s" or "bytes"
  nlohmann::json groups = nlohmann::json::array();
  nlohmann::json points = nlohmann::json::array();

  size_t group(const std::string& name) {
    for (size_t i = 0; i < groups.size(); ++i)
      if (groups[i] == name) return i;
    groups.push_back(name);
    return groups.size() - 1;
  }
  void add(const nlohmann::json& predicted, const nlohmann::json& measured,
           const std::string& group_name, const std::string& label) {
    if (!predicted.is_number() || !measured.is_number() || measured.get<double>() <= 0) return;
    points.push_back({predicted, measured, group(group_name), label});
  }
  nlohmann::json to_json() const {
    return {{"title", title}, {"unit", unit}, {"groups", groups}, {"points", points}};
  }
};

// compare --json (one per run; demo writes one per layout): each action kind on each rank.
nlohmann::json action_kinds(const std::vector<const Input*>& comparisons) {
  Scatter s{"time per step by action kind and rank (compare)", "s"};
  for (const Input* in : comparisons) {
    const std::string layout = in->json.at("rows").at(0).at("layout");
    for (const auto& a : in->json.at("actions"))
      s.add(a.at("predicted_s"), a.at("measured_s"), layout,
            "rank " + std::to_string(a.at("rank").get<int>()) + " " + a.at("name").get<std::string>());
  }
  return s.to_json();
}

// demo --json: each layout's step time, and its peak memory.
void demo_layouts(const Input& in, nlohmann::json& scatters) {
  Scatter time{"step time per layout (demo)", "s"}, peak{"peak memory per layout (demo)", "bytes"};
  for (const auto& r : in.json.at("rows")) {
    const std::string layout = r.at("layout");
    time.add(r.at("predicted_step_time_s"), r.at("measured_step_time_s"), "layouts", layout);
    peak.add(r.at("predicted_peak_bytes"), r.at("measured_peak_bytes"), "layouts", layout);
  }
  scatters.push_back(time.to_json());
  scatters.push_back(peak.to_json());
}

// validate --rows: every priced published run, grouped by its dataset.
void validate_rows(const Input& in, nlohmann::json& scatters) {
  Scatter time{"step time per published run, by dataset (validate)", "s"},
      memory{"memory per published run, by dataset (validate)", "bytes"};
  for (const auto& r : in.json) {
    if (r.contains("refused")) continue;
    const std::string set = r.at("set");
    const std::string label = r.at("model").get<std::string>() + " on " +
                              std::to_string(r.at("devices").get<int64_t>()) + ": " +
                              r.at("layout").get<std::string>();
    time.add(r.at("predicted_step_time_s"), r.at("measured_step_time_s"), set, label);
    memory.add(r.at("predicted_memory_bytes"), r.value("measured_memory_bytes", nlohmann::json()),
               set, label);
  }
  scatters.push_back(time.to_json());
  if (!memory.points.empty()) scatters.push_back(memory.to_json());
}

// validate --json: each set's step-time scores, as a table.
nlohmann::json validate_sets(const Input& in) {
  nlohmann::json sets = nlohmann::json::array();
  for (const auto& s : in.json.at("sets")) {
    const nlohmann::json& t = s.at("step_time");
    sets.push_back({{"name", s.at("name")},
                    {"priced_rows", s.at("priced_rows")},
                    {"refused_rows", s.at("refused_rows")},
                    {"mape_pct", t.value("mape_pct", nlohmann::json())},
                    {"median_abs_pct", t.value("median_abs_pct", nlohmann::json())},
                    {"signed_mean_pct", t.value("signed_mean_pct", nlohmann::json())}});
  }
  return sets;
}

}  // namespace

nlohmann::json accuracy_section(const std::vector<Input>& inputs) {
  nlohmann::json scatters = nlohmann::json::array();
  if (const auto c = inputs_of(inputs, InputKind::comparison); !c.empty())
    scatters.push_back(action_kinds(c));
  for (const Input* in : inputs_of(inputs, InputKind::demo)) demo_layouts(*in, scatters);
  for (const Input* in : inputs_of(inputs, InputKind::validate_rows)) validate_rows(*in, scatters);
  nlohmann::json out{{"scatters", scatters}};
  if (const auto v = inputs_of(inputs, InputKind::validate); !v.empty())
    out["sets"] = validate_sets(*v.front());
  if (scatters.empty() && !out.contains("sets")) return nullptr;
  return out;
}

}  // namespace shardplan::report
