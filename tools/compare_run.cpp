#include "tools/compare_run.h"

#include <fmt/format.h>

#include "core/error.h"
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

Predicted predict_measured(const Measurement& measured, const std::string& profile_file) {
  const Plan& p = measured.plan;
  Cluster cluster = p.cluster;
  InputOptions profile_option;
  profile_option.profile_file = profile_file;
  Predicted out;
  if (std::optional<Profile> profile = apply_profile_option(profile_option, cluster, p.training))
    out.profile = std::make_unique<Profile>(std::move(*profile));
  ExecutionOptions x =
      measured.backend == Backend::cpu ? cpu_executor_options() : ExecutionOptions{};
  x.profile = out.profile.get();
  out.simulation = simulate_plan(p.model, cluster, p.training, p.layout, x, false);
  require_finished(out.simulation.result);
  out.source = profile_file.empty() ? "from the datasheet figures" : "from " + profile_file;
  return out;
}

}  // namespace shardplan::cli
