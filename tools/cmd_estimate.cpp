// `shardplan estimate`: price one layout with the analytical cost model — itemised memory of the
// worst rank, compute by kind, every collective on the level it spans, and the step's totals.
#include <memory>
#include <optional>
#include <string>

#include "simulator/estimate.h"
#include "simulator/estimate_report.h"
#include "tools/cli_inputs.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct EstimateOptions {
  InputOptions inputs;
  ReportOptions report;
  std::string framework;
};

int run_estimate(const EstimateOptions& o) {
  Plan p = resolve_plan(o.inputs, o.framework);
  const std::optional<Profile> profile = apply_profile_option(o.inputs, p.cluster, p.training);
  const ExecutionOptions x = priced_execution(o.framework, p.training, profile);
  const Estimate e = estimate(p.model, p.cluster, p.training, p.layout, x);
  return print_report(o.report, p, estimate_to_json(e), format_estimate_table(e, o.report.wide),
                      e.fits);
}

}  // namespace

Subcommand add_estimate(CLI::App& root) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* app = root.add_subcommand(
      "estimate",
      "Price one layout: memory per rank item by item, compute, communication, step time, "
      "tokens/s, TFLOP/s per device, MFU (model FLOPs, Narayanan et al. 2021 eq. 3, without "
      "recompute) and HFU (hardware FLOPs, with recompute). Exits 3 when the layout does not fit.");
  add_plan_options(app, o->inputs);
  add_report_options(app, o->report);
  add_framework_option(app, o->framework);
  return {app, [o] { return run_estimate(*o); }};
}

}  // namespace shardplan::cli
