// A simulated plan for machines (JSON with the keys of docs/conventions.md at the top level, the
// estimate's figures beside them) and for people (step figures simulated against estimated, each
// rank's time and memory, and what the critical path is made of).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/plan_simulation.h"

namespace shardplan {

nlohmann::json simulation_to_json(const PlanSimulation& s);

// Fits kTableColumns (notes and lists wrapped, tighter columns) unless `wide` (--wide: one line a
// row).
std::string format_simulation_table(const PlanSimulation& s, bool wide = false);

}  // namespace shardplan
