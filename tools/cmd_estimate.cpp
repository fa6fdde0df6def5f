// `shardplan estimate`: price one layout with the analytical cost model — itemised memory of the
// worst rank, compute by kind, every collective on the level it spans, and the step's totals.
#include <memory>
#include <string>

#include <fmt/core.h>

#include "core/error.h"
#include "core/json_reader.h"
#include "simulator/estimate.h"
#include "simulator/estimate_report.h"
#include "tools/cli_inputs.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct EstimateOptions {
  InputOptions inputs;
  std::string json_file;
  std::string format = "table";
  ExecutionOptions execution;
};

int run_estimate(const EstimateOptions& o) {
  const Plan p = resolve_plan(o.inputs);
  const Estimate e = estimate(p.model, p.cluster, p.training, p.layout, o.execution);
  const nlohmann::json j = estimate_to_json(e);
  if (!o.json_file.empty()) write_json_file(o.json_file, j);
  if (o.format == "json") fmt::print("{}\n", j.dump(2));
  else fmt::print("{}: {} on {} x {} ({} devices)\n\n{}", to_string(p.layout), p.model.name,
                  p.cluster.name, p.cluster.nodes, p.cluster.world(), format_estimate_table(e));
  return static_cast<int>(e.fits ? ExitCode::ok : ExitCode::nothing_fits);
}

}  // namespace

Subcommand add_estimate(CLI::App& root) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* app = root.add_subcommand(
      "estimate",
      "Price one layout: memory per rank item by item, compute, communication, step time, "
      "tokens/s, TFLOP/s per device, MFU (model FLOPs, Narayanan et al. 2021 eq. 3, without "
      "recompute) and HFU (hardware FLOPs, with recompute). Exits 3 when the layout does not fit.");
  app->add_option("plan", o->inputs.plan_file, "A plan JSON (instead of --model/--cluster/--layout)");
  add_input_options(app, o->inputs, LayoutInput::optional);
  app->add_option("--json", o->json_file, "Also write every figure as JSON to this file");
  app->add_option("--format", o->format, "table (default) or json on stdout")
      ->check(CLI::IsMember({"table", "json"}));
  add_execution_options(app, o->execution);
  return {app, [o] { return run_estimate(*o); }};
}

}  // namespace shardplan::cli
