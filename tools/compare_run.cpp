#include "tools/compare_run.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/framework.h"
#include "simulator/device_efficiency.h"
#include "tools/cli_inputs.h"

namespace shardplan::cli {

void check_same_run(const Plan& plan, const std::string& plan_file, const Measurement& measured,
                    const std::string& measured_file) {
  const Plan& ran = measured.plan;
  if (ran.model.name != plan.model.name)
    throw InputError(measured_file, "plan.model",
                     fmt::format("ran {}, {} plans {}", ran.model.name, plan_file, plan.model.name),
                     "compare a plan with the measurement of its own run");
  if (to_string(ran.layout) != to_string(plan.layout))
    throw InputError(
        measured_file, "layout",
        fmt::format("ran {}, {} has {}", to_string(ran.layout), plan_file, to_string(plan.layout)),
        "compare a plan with the measurement of its own run");
}

Predicted predict_measured(const Measurement& measured, const std::string& profile_file,
                           const std::string& framework) {
  if (profile_file.empty())
    return predict_measured(measured, nullptr, "the datasheet figures", framework);
  return predict_measured(measured, std::make_unique<Profile>(read_profile_file(profile_file)),
                          profile_file, framework);
}

Predicted predict_measured(const Measurement& measured, std::unique_ptr<Profile> profile,
                           const std::string& source, const std::string& framework) {
  if (measured.backend == Backend::cpu && !framework.empty())
    throw InputError("--framework", "",
                     "a cpu measurement ran shardplan's CPU executor, which is priced as it runs",
                     "--framework names how a GPU run executed its layers");
  const Plan& p = measured.plan;
  Cluster cluster = p.cluster;
  if (profile) {
    check_profile_dtype(*profile, source, p.training);
    cluster = apply_profile(std::move(cluster), *profile, source);
  }
  Predicted out;
  out.profile = std::move(profile);
  const bool cpu = measured.backend == Backend::cpu;
  const Framework f = load_framework(cpu || framework.empty() ? kExecutorFramework : framework);
  ExecutionOptions x = cpu ? cpu_executor_options() : execution_options(f);
  x.profile = out.profile.get();
  // The program ran as the plan's training says; whether its tensor-parallel collectives hid
  // behind their GEMMs is how the framework that ran it runs them (shardplan's executor: not).
  Training t = p.training;
  t.tp_comm_overlap = f.tp_comm_overlap;
  out.simulation = simulate_plan(p.model, cluster, t, p.layout, x, false);
  require_finished(out.simulation.result);
  const OpTable ops = op_table(p, device_rates(cluster.device, p.training.dtype, x.profile), x);
  for (const Program& program : measured.programs)
    out.gemms.push_back(program_gemms(ops, program, p.layout.recompute));
  out.source = "from " + source;
  return out;
}

}  // namespace shardplan::cli
