// Everything one report page shows, as the one JSON blob the page carries and report.js draws:
// each section from the inputs that carry it, and for each section none of them carries a note
// naming the output that would fill it.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "report/inputs.h"

namespace shardplan::report {

// {"title", "inputs": [{file, source}], "ranking", "memory", "timelines": [...], "accuracy",
//  "explanation", "notes": [...]}; a section no input carries is null.
nlohmann::json report_data(const std::vector<Input>& inputs);

}  // namespace shardplan::report
