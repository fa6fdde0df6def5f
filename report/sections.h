// The page's sections as data: each takes the inputs that carry what it draws and returns the JSON
// report.js draws it from, or null when none of the inputs carries it (report_data.h then puts a
// note on the page naming the input that would fill it).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "report/inputs.h"

namespace shardplan::report {

// (1) plan --json's ranked layouts and the best of each other field value ("alternatives"), with
// step time, memory, MFU, and which are on the Pareto frontier of step time against memory.
nlohmann::json ranking_section(const std::vector<Input>& inputs);

// (5) plan --json's explanation, and each runner-up's and alternative's step time beside the
// winner's.
nlohmann::json explanation_section(const std::vector<Input>& inputs);

// (2) the memory of each stage or rank by item against the device: predicted and measured from a
// comparison, else the prediction of a plan or estimate, a simulation's, or a measurement's.
nlohmann::json memory_section(const std::vector<Input>& inputs);

// (4) predicted against measured: per action kind (compare), per layout (demo), per published
// run of each dataset (validate --rows), and validate --json's scores per set.
nlohmann::json accuracy_section(const std::vector<Input>& inputs);

}  // namespace shardplan::report
