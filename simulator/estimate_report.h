// An estimate for machines (JSON with every figure, the keys of docs/conventions.md at the top
// level) and for people (an itemised table whose figures can be checked by hand).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "simulator/estimate.h"

namespace shardplan {

nlohmann::json estimate_to_json(const Estimate& e);

// Step, memory of the worst rank item by item, compute of one micro-batch by kind, every collective
// and the training run. An infeasible layout says "does not fit: <item> needs X GiB, Y GiB free".
std::string format_estimate_table(const Estimate& e);

// A line saying that the estimate's MFU is above the best published on its GPU
// (Estimate::mfu_above_published), for the reports that print MFU.
std::string mfu_caution(const Estimate& e);

}  // namespace shardplan
