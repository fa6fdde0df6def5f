// `shardplan validate`: score the cost model against the published GPU training runs of the
// development set (data/fidelity/): step-time error per set and slice, memory, fits against
// crashes, and how well the planner would have picked among the measured layouts.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json_reader.h"
#include "core/presets.h"
#include "tools/cli_inputs.h"
#include "tools/cmd_report.h"
#include "tools/output_file.h"
#include "tools/subcommand.h"
#include "validate/pricing.h"
#include "validate/sets.h"
#include "validate/validate_report.h"

namespace shardplan::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> sets;
  std::string data_folder;
  std::string rows_file;
  ReportOptions report;
  std::string report_page;  // --report: the HTML page
};

int run_validate(const ValidateOptions& o) {
  if (!o.report_page.empty()) check_output_folder(o.report_page);
  const auto start = std::chrono::steady_clock::now();
  std::vector<const SetEntry*> chosen;
  for (const auto& name : o.sets) chosen.push_back(&find_set(name));
  if (chosen.empty())
    for (const auto& entry : fidelity_sets()) chosen.push_back(&entry);
  const std::string folder = o.data_folder.empty()
                                 ? (std::filesystem::path(data_dir()) / "data" / "fidelity").string()
                                 : o.data_folder;
  std::vector<SetScores> scores;
  nlohmann::json row_results = nlohmann::json::array();
  int rows = 0;
  for (const SetEntry* entry : chosen) {
    const FidelitySet set = read_set(*entry, folder);
    const std::vector<PricedRow> priced = price_set(set);
    scores.push_back(score_set(set, priced));
    rows += scores.back().rows;
    if (!o.rows_file.empty() || !o.report_page.empty())
      for (auto& r : rows_to_json(set, priced)) row_results.push_back(std::move(r));
  }
  if (!o.rows_file.empty()) write_json_file(o.rows_file, row_results);
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json scores_json = scores_to_json(scores);
  emit_report(o.report, scores_json,
              format_scores_table(scores, o.report.wide) +
                  fmt::format("\n{} rows of {} sets in {:.1f} s\n", rows, scores.size(), elapsed_s));
  if (!o.report_page.empty())
    write_report_page(o.report_page,
                      {{"validate --json", report::InputKind::validate, scores_json},
                       {"validate --rows", report::InputKind::validate_rows, row_results}});
  return static_cast<int>(ExitCode::ok);
}

}  // namespace

Subcommand add_validate(CLI::App& root) {
  auto o = std::make_shared<ValidateOptions>();
  CLI::App* app = root.add_subcommand(
      "validate",
      "Score the cost model against published GPU training runs (data/fidelity/): step-time error "
      "(MAPE, median, max, signed mean of predicted / measured - 1) per set and slice, memory, "
      "fits against crashes, the planner's pick regret and Spearman rank correlation within each "
      "group of measured layouts (rows in a pathological slice, degraded runs, left out). Exits 0 "
      "whatever the errors.");
  app->add_option("--set", o->sets, "Only this set (repeatable): " + [] {
    std::string names;
    for (const auto& s : fidelity_sets()) names += (names.empty() ? "" : ", ") + s.name;
    return names;
  }());
  app->add_option("--data", o->data_folder,
                  "Folder holding the set files (default: the data folder's data/fidelity/)");
  app->add_option("--rows", o->rows_file,
                  "Also write every row beside its prediction (layout, measured and predicted "
                  "step time and memory, error, or why it was refused) as a JSON array to this file");
  add_report_options(app, o->report);
  add_report_page_option(app, o->report_page);
  return {app, [o] { return run_validate(*o); }};
}

}  // namespace shardplan::cli
