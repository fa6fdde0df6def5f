// A plan file: the full description of one training configuration (model, cluster, training,
// layout) plus what was predicted for it. `plan` writes it; estimate, simulate, execute and
// compare read it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/training.h"

namespace shardplan {

struct Plan {
  Model model;
  Cluster cluster;
  Training training;
  Layout layout;
  nlohmann::json prediction = nlohmann::json::object();  // the cost model's figures, if any
};

// Keys: "model", "cluster", "training", "layout", "prediction" (optional), each in its own
// description's JSON format. Validated as a whole (the layout against model, cluster, training).
Plan plan_from_json(const nlohmann::json& j, const std::string& file);
nlohmann::json plan_to_json(const Plan& p);
Plan load_plan(const std::string& path);

}  // namespace shardplan
