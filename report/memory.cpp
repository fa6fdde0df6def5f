// Section (2): each stage's or rank's memory by item, stacked, against the device's capacity.
#include <map>
#include <string>
#include <utility>

#include "report/sections.h"

namespace shardplan::report {
namespace {

// "optimizer_moments_bytes" -> "optimizer moments".
std::string item_label(std::string key) {
  if (key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0) key.resize(key.size() - 6);
  for (char& c : key)
    if (c == '_') c = ' ';
  return key;
}

struct Chart {
  nlohmann::json columns = nlohmann::json::array();
  void add(const std::string& label, const nlohmann::json& items) {
    columns.push_back({{"label", label}, {"items", items}});
  }
};

// A prediction's stages (plan --out's prediction, estimate --json): every item, the runtime's
// reserve included, so that the stack's top is what the device holds.
nlohmann::json predicted_stages(const nlohmann::json& prediction, const std::string& source) {
  Chart chart;
  for (const auto& stage : prediction.at("stages")) {
    nlohmann::json items = nlohmann::json::object();
    for (const auto& [key, bytes] : stage.at("items").items()) items[item_label(key)] = bytes;
    chart.add("stage " + std::to_string(stage.at("stage").get<int>()), items);
  }
  const nlohmann::json& worst = prediction.at("memory");
  return {{"source", source},
          {"capacity_bytes", worst.at("capacity_bytes")},
          {"columns", chart.columns}};
}

// compare --json: each rank's items predicted and measured side by side (peak is not an item).
nlohmann::json compared_ranks(const Input& in) {
  Chart chart;
  std::map<int, std::pair<nlohmann::json, nlohmann::json>> ranks;  // predicted, measured
  for (const auto& m : in.json.at("memory")) {
    if (m.at("item") == "peak") continue;
    auto& [predicted, measured] = ranks[m.at("rank").get<int>()];
    predicted[m.at("item").get<std::string>()] = m.at("predicted_bytes");
    measured[m.at("item").get<std::string>()] = m.at("measured_bytes");
  }
  for (const auto& [rank, items] : ranks) {
    chart.add("rank " + std::to_string(rank) + " predicted", items.first);
    chart.add("rank " + std::to_string(rank) + " measured", items.second);
  }
  return {{"source", "compare --json (" + in.file + ")"}, {"columns", chart.columns}};
}

// simulate --json: each simulated program's memory (its model state, activations and reserve).
nlohmann::json simulated_ranks(const Input& in) {
  Chart chart;
  for (const auto& m : in.json.at("memory")) {
    nlohmann::json items = nlohmann::json::object();
    for (const char* key : {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                            "activations_bytes", "other_bytes", "allocator_cache_bytes",
                            "runtime_reserved_bytes"})
      items[item_label(key)] = m.at(key);
    chart.add("rank " + std::to_string(m.at("rank").get<int64_t>()) + " (stage " +
                  std::to_string(m.at("stage").get<int>()) + ")",
              items);
  }
  const nlohmann::json& first = in.json.at("memory").at(0);
  return {{"source", "simulate --json (" + in.file + ")"},
          {"capacity_bytes", first.at("capacity_bytes")},
          {"columns", chart.columns}};
}

// execute --out: each rank's measured items.
nlohmann::json measured_ranks(const Input& in) {
  Chart chart;
  for (const auto& r : in.json.at("ranks")) {
    nlohmann::json items = nlohmann::json::object();
    for (const auto& [key, bytes] : r.at("memory").items())
      if (key != "peak_bytes") items[item_label(key)] = bytes;
    chart.add("rank " + std::to_string(r.at("rank").get<int64_t>()), items);
  }
  return {{"source", "execute --out (" + in.file + ")"}, {"columns", chart.columns}};
}

}  // namespace

nlohmann::json memory_section(const std::vector<Input>& inputs) {
  if (auto c = inputs_of(inputs, InputKind::comparison); !c.empty()) return compared_ranks(*c.front());
  if (auto p = inputs_of(inputs, InputKind::plan); !p.empty() && p.front()->json.contains("prediction"))
    return predicted_stages(p.front()->json.at("prediction"), "plan --out (" + p.front()->file + ")");
  if (auto e = inputs_of(inputs, InputKind::estimate); !e.empty())
    return predicted_stages(e.front()->json, "estimate --json (" + e.front()->file + ")");
  if (auto s = inputs_of(inputs, InputKind::simulation); !s.empty()) return simulated_ranks(*s.front());
  if (auto m = inputs_of(inputs, InputKind::measurement); !m.empty()) return measured_ranks(*m.front());
  return nullptr;
}

}  // namespace shardplan::report
