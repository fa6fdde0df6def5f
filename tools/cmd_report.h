// What `shardplan report` offers the subcommands that also write its page (plan, demo and validate
// --report FILE): the option, and the page written from what they computed and the files they wrote.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/plan.h"
#include "report/inputs.h"
#include "simulator/execution_options.h"

namespace shardplan::cli {

// --report FILE on `app`.
void add_report_page_option(CLI::App* app, std::string& file);

// Writes the page of `inputs` and of the JSON files `files` (recognised by their keys) to `path`,
// atomically, and prints where.
void write_report_page(const std::string& path, std::vector<report::Input> inputs,
                       const std::vector<std::string>& files = {});

// plan --report: the search (plan --json's JSON) and the chosen plan, with the plan's step
// simulated (one program per pipeline stage) for the timeline, priced with `x`.
void write_plan_report_page(const std::string& path, const nlohmann::json& search,
                            const Plan& plan, const ExecutionOptions& x);

}  // namespace shardplan::cli
