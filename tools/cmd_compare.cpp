// `shardplan compare PLAN.json measured.json`: the plan as it ran, simulated rank by rank with the
// cost model (optionally a calibrated profile), set beside what `execute` measured — step time,
// every action kind on every rank, every memory item — with the relative errors and where the
// time went differently; `--trace` puts both timelines in one Chrome trace.
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/json_reader.h"
#include "core/measurement.h"
#include "simulator/comparison_report.h"
#include "simulator/trace.h"
#include "tools/cli_inputs.h"
#include "tools/compare_run.h"
#include "tools/output_file.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct CompareOptions {
  std::string plan_file;
  std::string measured_file;
  std::string profile_file;
  std::string trace_file;
  std::string framework;
  ReportOptions report;
};

int run_compare(const CompareOptions& o) {
  for (const std::string* f : {&o.report.json_file, &o.trace_file})
    if (!f->empty()) check_output_folder(*f);
  const Plan plan = load_plan(o.plan_file);
  const Measurement measured = read_measurement_file(o.measured_file);
  check_same_run(plan, o.plan_file, measured, o.measured_file);
  const Predicted predicted = predict_measured(measured, o.profile_file, o.framework);
  const Comparison c = compare_run(predicted.simulation, measured, predicted.gemms);

  if (!o.trace_file.empty()) {
    nlohmann::json both = chrome_trace(predicted.simulation.step.programs,
                                       predicted.simulation.result.timings, 1, {"predicted", 0});
    const nlohmann::json ran = chrome_trace(measured.programs, measured.timings.back(), 1,
                                            {"measured", measured.plan.layout.world()});
    for (const auto& e : ran["traceEvents"]) both["traceEvents"].push_back(e);
    write_json_file(o.trace_file, both, JsonStyle::compact);
  }
  std::string table = fmt::format("{}: {} on {} ranks ({}), predicted {}\n\n", c.layout,
                                  measured.plan.model.name, measured.plan.layout.world(),
                                  enum_name(measured.backend, kBackendNames), predicted.source);
  table += format_comparison_table(c, o.report.wide);
  if (!o.trace_file.empty())
    table += fmt::format("\nTrace: {} (predicted ranks, then measured ranks from pid {})\n",
                         o.trace_file, measured.plan.layout.world());
  emit_report(o.report, comparison_to_json(c), table);
  return static_cast<int>(ExitCode::ok);
}

}  // namespace

Subcommand add_compare(CLI::App& root) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* app = root.add_subcommand(
      "compare",
      "Compare predicted with measured: the plan as `execute` ran it, simulated rank by rank, "
      "beside measured.json — step time (median after the warm-up), each action kind on each "
      "rank (each action's median, summed), each memory item at the peak — with relative errors "
      "(predicted - measured) / measured and the action kinds that account for most of the gap");
  app->add_option("plan", o->plan_file, "The plan JSON that was executed")->required();
  app->add_option("measured", o->measured_file, "measured.json (`execute --out`)")->required();
  app->add_option("--profile", o->profile_file,
                  "Predict with a calibration profile (`shardplan calibrate`) instead of the "
                  "datasheet figures");
  app->add_option("--framework", o->framework,
                  "How a GPU run executed its layers: a framework profile (frameworks/) or a path; "
                  "default: shardplan's own executor (frameworks/shardplan.json)");
  app->add_option(
      "--trace", o->trace_file,
      "Write the predicted and the measured timeline (last step) into one Chrome trace");
  add_report_options(app, o->report);
  return {app, [o] { return run_compare(*o); }};
}

}  // namespace shardplan::cli
