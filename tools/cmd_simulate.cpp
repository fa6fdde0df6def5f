// `shardplan simulate`: run one step of a plan event by event — every rank's program of compute,
// pipeline transfers and collectives priced by the cost model — and print where the time goes,
// beside the closed-form estimate; optionally write the timeline as a Chrome trace.
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/json_reader.h"
#include "simulator/plan_simulation.h"
#include "simulator/simulation_report.h"
#include "simulator/trace.h"
#include "tools/cli_inputs.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct SimulateOptions {
  InputOptions inputs;
  ReportOptions report;
  std::string trace_file;
  bool no_symmetry = false;
  std::string framework;
};

int run_simulate(const SimulateOptions& o) {
  Plan p = resolve_plan(o.inputs, o.framework);
  const std::optional<Profile> profile = apply_profile_option(o.inputs, p.cluster, p.training);
  const ExecutionOptions x = priced_execution(o.framework, p.training, profile);
  const PlanSimulation s =
      simulate_plan(p.model, p.cluster, p.training, p.layout, x, !o.no_symmetry);
  require_finished(s.result);
  std::string table = format_simulation_table(s, o.report.wide);
  if (!o.trace_file.empty()) {
    write_json_file(o.trace_file,
                    chrome_trace(s.step.programs, s.result.timings, s.result.ranks_per_program, {},
                                 &s.result.ranks),
                    JsonStyle::compact);
    table += fmt::format("\nTrace: {} ({} actions; open it in ui.perfetto.dev)\n", o.trace_file,
                         s.result.events);
  }
  return print_report(o.report, p, simulation_to_json(s), table, s.fits);
}

}  // namespace

Subcommand add_simulate(CLI::App& root) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* app = root.add_subcommand(
      "simulate",
      "Simulate one step of a plan event by event: every rank's compute, pipeline transfers and "
      "collectives priced by the cost model, run with their real dependencies. Prints the step "
      "time beside the estimate, each rank's busy, idle, exposed-communication and bubble time, "
      "the critical path, and memory with the simulated activation peak; MFU counts model FLOPs "
      "(Narayanan et al. 2021 eq. 3, without recompute), HFU hardware FLOPs (with recompute). "
      "Ranks that run the same program (the tp, cp, ep and dp peers of a pipeline stage) are "
      "simulated once unless --no-symmetry. Exits 3 when the plan does not fit.");
  add_plan_options(app, o->inputs);
  app->add_option("--trace", o->trace_file,
                  "Write the timeline as Chrome trace JSON (pid = rank, tid = stream) for "
                  "ui.perfetto.dev");
  add_report_options(app, o->report);
  app->add_flag("--no-symmetry", o->no_symmetry, "Simulate every rank, not one per pipeline stage");
  add_framework_option(app, o->framework);
  return {app, [o] { return run_simulate(*o); }};
}

}  // namespace shardplan::cli
