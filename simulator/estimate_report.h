// An estimate for machines (JSON with every figure, the keys of docs/conventions.md at the top
// level) and for people (an itemised table whose figures can be checked by hand).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "simulator/estimate.h"

namespace shardplan {

nlohmann::json estimate_to_json(const Estimate& e);

// Step, memory of the worst rank item by item, compute of one micro-batch by kind, every collective
// and the training run. An infeasible layout says "does not fit: <item> needs X GiB, Y GiB free".
// Fits kTableColumns (notes wrapped, the collectives without their time per call) unless `wide`
// (--wide: one line a row, every column).
std::string format_estimate_table(const Estimate& e, bool wide = false);

// A line saying that the estimate's MFU is above the best published on its GPU
// (Estimate::mfu_above_published), for the reports that print MFU.
std::string mfu_caution(const Estimate& e);

// A row of a memory table (estimate's and simulate's): item, bytes, GiB and a note, the note
// wrapped under its column to fit kTableColumns unless `wide`.
std::string memory_row(std::string_view name, int64_t bytes, std::string_view note = "",
                       bool wide = false);

}  // namespace shardplan
