// What compare and demo share: checking that a measurement ran the plan it is compared with, and
// predicting that run — the plan as it ran, every rank simulated, priced as its backend runs.
#pragma once

#include <memory>
#include <string>

#include "core/measurement.h"
#include "core/plan.h"
#include "core/profile.h"
#include "simulator/plan_simulation.h"
#include "simulator/priced_ops.h"

namespace shardplan::cli {

// InputError naming `measured_file` when it ran another model or layout than `plan`.
void check_same_run(const Plan& plan, const std::string& plan_file, const Measurement& measured,
                    const std::string& measured_file);

struct Predicted {
  std::unique_ptr<Profile> profile;  // the simulation's options point at it; null: datasheets
  PlanSimulation simulation;         // every rank
  std::vector<ProgramGemms> gemms;   // by rank: the cost model's GEMMs of each program
  std::string source;                // "from profile.json", "from the datasheet figures"
};

// The measured plan simulated without symmetry, priced as its backend runs (the cpu executor's
// options for a cpu run; for a GPU run the framework profile `framework`, by default
// kExecutorFramework), with the calibration profile at `profile_file` ("": none).
Predicted predict_measured(const Measurement& measured, const std::string& profile_file,
                           const std::string& framework = "");

// The same with a profile in hand (null: none); `source` names it in errors and reports.
Predicted predict_measured(const Measurement& measured, std::unique_ptr<Profile> profile,
                           const std::string& source, const std::string& framework = "");

// The framework profile of shardplan's own executor on a GPU (frameworks/shardplan.json).
inline constexpr const char* kExecutorFramework = "shardplan";

}  // namespace shardplan::cli
