// `shardplan report INPUT... -o report.html`: one self-contained HTML page of what the other
// subcommands wrote (plans, search results, estimates, simulations and traces, measurements,
// comparisons, demo and validate results), each input recognised by its keys (report/inputs.h).
#include "tools/cmd_report.h"

#include <fmt/core.h>

#include <memory>

#include "core/error.h"
#include "core/json_reader.h"
#include "planner/rerank.h"
#include "report/page.h"
#include "report/report_data.h"
#include "simulator/plan_simulation.h"
#include "simulator/trace.h"
#include "tools/output_file.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct ReportCommandOptions {
  std::vector<std::string> files;
  std::string out;
};

}  // namespace

void add_report_page_option(CLI::App* app, std::string& file) {
  app->add_option("--report", file,
                  "Also write an HTML report of the result to this file (one self-contained "
                  "page; `shardplan report` makes it from the JSON files)");
}

void write_report_page(const std::string& path, std::vector<report::Input> inputs,
                       const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    nlohmann::json j = read_json_file(file);
    const report::InputKind kind = report::detect_input(j, file);
    inputs.push_back({file, kind, std::move(j)});
  }
  const std::string page = report::report_page(report::report_data(inputs));
  write_text_file(path, page);
  fmt::print("wrote {} ({:.0f} KB; open it in a browser, it needs no network)\n", path,
             static_cast<double>(page.size()) / 1e3);
}

void write_plan_report_page(const std::string& path, const nlohmann::json& search,
                            const Plan& plan, const ExecutionOptions& x) {
  std::vector<report::Input> inputs{{"plan --json", report::InputKind::search, search},
                                    {"plan --out", report::InputKind::plan, plan_to_json(plan)}};
  // The timeline: the chosen plan's step as simulate draws it, within the re-rank's bound.
  if (simulated_actions(plan.model, plan.training, plan.layout, true) <= kMaxRerankActions) {
    const PlanSimulation s = simulate_plan(plan.model, plan.cluster, plan.training, plan.layout, x, true);
    require_finished(s.result);
    inputs.push_back({"simulate --trace of the chosen plan", report::InputKind::trace,
                      chrome_trace(s.step.programs, s.result.timings, s.result.ranks_per_program,
                                   {}, &s.result.ranks)});
  }
  write_report_page(path, std::move(inputs));
}

Subcommand add_report(CLI::App& root) {
  auto o = std::make_shared<ReportCommandOptions>();
  CLI::App* app = root.add_subcommand(
      "report",
      "Write one self-contained HTML page (Chart.js inlined, no network) of what plan, estimate, "
      "simulate, execute, compare, demo and validate wrote: ranked layouts and their Pareto "
      "frontier, memory by stage, the step timeline, predicted against measured, and why the "
      "layout won. Each input is recognised by its keys.");
  app->add_option("inputs", o->files, "JSON files written by plan, estimate, simulate, execute, "
                                      "compare, demo or validate")
      ->required()
      ->check(CLI::ExistingFile);
  app->add_option("-o,--out", o->out, "The HTML file to write")->required();
  return {app, [o] {
            check_output_folder(o->out);
            write_report_page(o->out, {}, o->files);
            return static_cast<int>(ExitCode::ok);
          }};
}

}  // namespace shardplan::cli
