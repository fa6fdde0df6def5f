#include "report/report_data.h"

#include <filesystem>
#include <string>

#include "report/sections.h"
#include "report/timeline.h"

namespace shardplan::report {
namespace {

// "llama3-8b on dgx-h100 x 4, gbs 512, seq 2048" from the first plan; else what was given.
std::string page_title(const std::vector<Input>& inputs) {
  const auto plans = inputs_of(inputs, InputKind::plan);
  if (plans.empty()) return "shardplan report";
  const nlohmann::json& p = plans.front()->json;
  return p.at("model").value("name", "model") + " on " + p.at("cluster").value("name", "cluster") +
         " x " + std::to_string(p.at("cluster").value("nodes", 1)) + ", gbs " +
         std::to_string(p.at("training").value("global_batch", 0)) + ", seq " +
         std::to_string(p.at("training").value("seq_len", 0));
}

nlohmann::json timelines(const std::vector<Input>& inputs) {
  const auto traces = inputs_of(inputs, InputKind::trace);
  nlohmann::json out = nlohmann::json::array();
  for (const Input* in : traces) {
    nlohmann::json t = timeline_from_trace(
        in->json, std::filesystem::path(in->file).stem().string(), kMaxTimelineBars / traces.size());
    t["file"] = in->file;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

nlohmann::json report_data(const std::vector<Input>& inputs) {
  nlohmann::json data{{"title", page_title(inputs)},
                      {"inputs", nlohmann::json::array()},
                      {"ranking", ranking_section(inputs)},
                      {"memory", memory_section(inputs)},
                      {"timelines", timelines(inputs)},
                      {"accuracy", accuracy_section(inputs)},
                      {"explanation", explanation_section(inputs)},
                      {"notes", nlohmann::json::array()}};
  for (const Input& in : inputs)
    data["inputs"].push_back({{"file", in.file}, {"source", input_kind_source(in.kind)}});
  nlohmann::json& notes = data["notes"];
  if (data["ranking"].is_null())
    notes.push_back("Ranked layouts: give the search's results (plan --json FILE).");
  if (data["memory"].is_null())
    notes.push_back("Memory: give a plan (plan --out), an estimate, simulate --json, a "
                    "measurement or compare --json.");
  if (data["timelines"].empty())
    notes.push_back("Step timeline: give a Chrome trace (simulate --trace, execute --trace, or "
                    "compare --trace for predicted and measured together).");
  if (data["accuracy"].is_null())
    notes.push_back("Predicted against measured: give compare --json, demo --json, or validate "
                    "--json and --rows.");
  if (data["explanation"].is_null())
    notes.push_back("Why this layout won: give the search's results (plan --json FILE).");
  return data;
}

}  // namespace shardplan::report
