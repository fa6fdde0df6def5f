// The report as one self-contained HTML page: skeleton and style, the data as one JSON blob,
// Chart.js and report.js inlined. Nothing is fetched: a Content-Security-Policy forbids it, and
// report.js records any attempt, like any script error, on <body> for the headless-browser test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace shardplan::report {

// `data` as report_data.h builds it.
std::string report_page(const nlohmann::json& data);

}  // namespace shardplan::report
