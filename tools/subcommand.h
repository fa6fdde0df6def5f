// How the shardplan CLI is assembled: each cmd_*.cpp adds one subcommand to the app and returns
// what to run once its options are parsed. main() holds the table and maps errors to exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace shardplan::cli {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // returns the exit code (docs/conventions.md)
};

Subcommand add_describe(CLI::App& root);
Subcommand add_estimate(CLI::App& root);
Subcommand add_plan(CLI::App& root);
Subcommand add_calibrate(CLI::App& root);
Subcommand add_simulate(CLI::App& root);
Subcommand add_execute(CLI::App& root);
Subcommand add_compare(CLI::App& root);
Subcommand add_demo(CLI::App& root);
Subcommand add_validate(CLI::App& root);
Subcommand add_report(CLI::App& root);

}  // namespace shardplan::cli
