// A comparison of predicted and measured for machines (docs/conventions.md: `rows`, one per
// layout, with the step time and peak memory both ways; then every action kind and memory item of
// every rank, and the gaps) and for people (the same as tables).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simulator/comparison.h"

namespace shardplan {

// One `rows` entry: layout, predicted_step_time_s, measured_step_time_s, step_time_error,
// predicted_peak_bytes, measured_peak_bytes, peak_error, and gemm_time_error where the run timed
// its GEMMs.
nlohmann::json comparison_row_json(const Comparison& c);

// {"rows": [row], "actions": [...], "memory": [...], "gap_rank", "gaps": [...]}.
nlohmann::json comparison_to_json(const Comparison& c);

// Fits kTableColumns (the action counts left to the JSON, sentences wrapped); `wide`: every
// column, one line each.
std::string format_comparison_table(const Comparison& c, bool wide = false);

}  // namespace shardplan
