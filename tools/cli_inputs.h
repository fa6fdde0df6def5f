// The options every pricing subcommand shares — model, cluster, training and layout, given as
// presets, files or flags — and how they resolve into one validated Plan.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "core/plan.h"
#include "core/profile.h"
#include "simulator/execution_options.h"

namespace shardplan::cli {

struct InputOptions {
  std::string plan_file;  // a plan JSON instead of the options below
  std::string model;
  std::string cluster;
  std::optional<int> nodes;
  std::string training_file;
  std::optional<int64_t> gbs;
  std::optional<int64_t> seq;
  std::string dtype;
  std::string fp8;  // Training::fp8's name; empty: as the training file says (none by default)
  std::string layout;            // the compact string
  std::string megatron;          // Megatron-LM flags in one string
  std::string deepspeed_config;  // a DeepSpeed JSON
  std::string profile_file;      // a calibration profile (shardplan calibrate) to price with
};

enum class LayoutInput { required, optional, none };

// Adds --model, --cluster, --nodes, --training, --gbs, --seq, --dtype, --fp8, --profile and, unless
// `layout` is none, --layout, --megatron and --deepspeed-config.
void add_input_options(CLI::App* app, InputOptions& o, LayoutInput layout);

// The plan positional argument and the input options (layout optional): what every subcommand
// that prices one plan takes.
void add_plan_options(CLI::App* app, InputOptions& o);

// How a pricing subcommand reports: a table, or JSON on stdout (--format json), and JSON to a file
// besides (--json FILE).
struct ReportOptions {
  std::string json_file;
  std::string format = "table";
  bool wide = false;  // tables whole, one line a row (default: they fit kTableColumns)
};
void add_report_options(CLI::App* app, ReportOptions& o);

// A number above zero, refused as "--gbs: abc is not a number above 0" (CLI11's PositiveNumber
// names a range up to 1.8e308, written out in 309 digits).
extern const CLI::Validator kPositive;

// Writes --json's file and prints the JSON (--format json) or `text`.
void emit_report(const ReportOptions& o, const nlohmann::json& j, const std::string& text);

// emit_report with the plan's title line above `table`. Returns the exit code: ok, or
// nothing_fits unless `fits`.
int print_report(const ReportOptions& o, const Plan& p, const nlohmann::json& j,
                 const std::string& table, bool fits);

// --framework NAME: the framework profile (core/framework.h) the layers are priced as.
void add_framework_option(CLI::App* app, std::string& framework);

// Model, cluster and training resolved from the options (no layout).
struct Inputs {
  Model model;
  Cluster cluster;
  Training training;
};
Inputs resolve_inputs(const InputOptions& o);

// A full plan: from --plan's file, or from the options with the layout resolved and validated as
// `framework` (a --framework name; empty: none named) runs it, which may split the layers itself.
Plan resolve_plan(const InputOptions& o, const std::string& framework = "");

// --profile's file, read, checked against the training's dtype (its GEMM rates are for the dtype
// it measured) and overlaid on `cluster` (apply_profile); none without --profile. Set
// ExecutionOptions::profile to the result, which must outlive the estimates made with it.
std::optional<Profile> apply_profile_option(const InputOptions& o, Cluster& cluster,
                                            const Training& training);

// InputError naming `file` when the profile measured another dtype than the training computes in.
void check_profile_dtype(const Profile& p, const std::string& file, const Training& training);

// How the layers are priced: as the framework profile runs them, or, with a calibration profile
// measured on the CPU backend, as shardplan's CPU executor runs them (cpu_executor_options: what
// ran where that profile was measured); with the calibration profile, which must outlive the
// estimates made with the result. `training` takes the framework's data-parallel overlap (run_by).
ExecutionOptions priced_execution(const std::string& framework, Training& training,
                                  const std::optional<Profile>& profile);

}  // namespace shardplan::cli
