#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/human_format.h"
#include "core/json_reader.h"
#include "planner/explain.h"
#include "planner/export.h"
#include "planner/node_count.h"
#include "planner/report.h"
#include "planner/rerank.h"
#include "planner/search.h"
#include "planner/suggest.h"
#include "simulator/estimate_report.h"
#include "tools/cli_inputs.h"
#include "tools/cmd_report.h"
#include "tools/output_file.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct PlanOptions {
  InputOptions inputs;
  std::string framework;
  int top_k = 5;
  std::string fix;
  std::string objective = "time";
  std::string out;
  std::string json;
  std::string report_page;  // --report: the HTML page
  std::string export_format;
  bool explain = false;
  bool no_simulate = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t max_layouts = kDefaultMaxLayouts;
  bool wide = false;
};

void print_export(ExportFormat format, const Plan& p) {
  if (format == ExportFormat::megatron) {
    fmt::print("\nMegatron-LM flags:\n{}\n", format_flags(megatron_flags(p)));
    return;
  }
  fmt::print("\nDeepSpeed config (--deepspeed_config ds_config.json):\n{}\n",
             deepspeed_config(p).dump(2));
  fmt::print("\nwith these Megatron-DeepSpeed flags for what the config does not hold:\n{}\n",
             format_flags(megatron_parallel_flags(p)));
  if (p.training.fp8 != Fp8Recipe::none)
    fmt::print(
        "\nFP8 ({} scaling) is no DeepSpeed setting: the model's linear layers must be "
        "Transformer Engine modules run under te.fp8_autocast with that recipe, as priced.\n",
        enum_name(p.training.fp8, kFp8RecipeNames));
}

// plan --json's file: the search's counts and top layouts, and where something fits, why the
// winner wins and the best layout of each other value of each field (the report draws them).
nlohmann::json search_json(const SearchResult& r) {
  nlohmann::json j = search_to_json(r);
  if (r.top.empty()) return j;
  j["explanation"] = explain_ranking(r);
  j["alternatives"] = nlohmann::json::array();
  for (const Alternative& a : r.alternatives)
    j["alternatives"].push_back({{"change", value_text(a)},
                                 {"layout", layout_label(a.best.layout)},
                                 {"objective", a.best.objective},
                                 {"prediction", estimate_to_json(a.best.estimate)}});
  return j;
}

int report_nothing_fits(const SearchResult& r, const Inputs& in, const LayoutSpec& fixed,
                        const SearchOptions& search) {
  fmt::print(
      "\nnothing fits: every valid layout needs more than a device's {} ({} usable).\n",
      format_gib(in.cluster.device.memory_GiB * (1 << 30)),
      format_gib((in.cluster.device.memory_GiB - in.cluster.device.reserved_GiB) * (1 << 30)));
  if (!r.pruned.empty() && !search.keep_refused) {
    fmt::print("closest to fitting:\n");
    SearchResult closest;
    closest.pruned = {r.pruned.begin(), r.pruned.begin() + std::min<size_t>(3, r.pruned.size())};
    fmt::print("{}", format_rejections(closest));
  }
  const std::vector<Suggestion> suggestions =
      suggest_changes(in.model, in.cluster, in.training, fixed, search);
  if (suggestions.empty()) {
    fmt::print(
        "no single change tried (a pin relaxed, up to 64x the nodes) makes anything fit; "
        "CPU offload is not modelled.\n");
  } else {
    fmt::print("changes that make something fit:\n");
    for (const Suggestion& s : suggestions)
      fmt::print("  {}: {} layouts fit, the best {} at {} per step\n", s.change, s.fitting,
                 layout_label(s.best.layout), format_seconds(s.best.estimate.step_time_s));
  }
  return static_cast<int>(ExitCode::nothing_fits);
}

// --objective cost: the best layout of each node count tried, the cheapest marked.
void print_node_counts(const std::vector<NodeCountSearch>& runs, std::optional<size_t> cheapest) {
  fmt::print("\ncheapest layout per cluster size (device-hours per million tokens):\n");
  for (size_t i = 0; i < runs.size(); ++i) {
    const SearchResult& r = runs[i].result;
    const int nodes = runs[i].cluster.nodes;
    if (r.top.empty()) {
      fmt::print("  {:>6} node{}  nothing fits\n", nodes, nodes == 1 ? " " : "s");
      continue;
    }
    const Ranked& best = r.top.front();
    fmt::print("  {:>6} node{}  {:>10.4g}  {:>10} per step  {}{}\n", nodes, nodes == 1 ? " " : "s",
               best.objective * 1e6 / 3600, format_seconds(best.estimate.step_time_s),
               layout_label(best.layout), cheapest == i ? "  <- cheapest" : "");
  }
  fmt::print("\n");
}

int run_plan(const PlanOptions& o) {
  if (!o.report_page.empty()) check_output_folder(o.report_page);
  Inputs in = resolve_inputs(o.inputs);
  const LayoutSpec fixed = parse_layout_string(o.fix, "--fix");
  if (fixed.global_batch) in.training.global_batch = *fixed.global_batch;
  if (in.training.global_batch == 0)
    throw InputError("--gbs", "training.global_batch", "not given",
                     "pass --gbs 512, or global_batch in --training FILE");
  validate_training(in.training, fixed.global_batch ? "--fix" : "--gbs");
  if (fixed.dtype) in.training = with_compute_dtype(in.training, *fixed.dtype);
  const std::optional<Profile> profile = apply_profile_option(o.inputs, in.cluster, in.training);

  SearchOptions search;
  search.objective = *enum_from_name(o.objective, kObjectiveNames);
  search.top_k = o.top_k;
  if (!o.export_format.empty())
    search.runs_on = enum_from_name(o.export_format, kExportFormatNames);
  search.keep_refused = o.explain;
  search.threads = o.threads;
  search.max_layouts = o.max_layouts;
  search.progress = isatty(fileno(stderr)) != 0;
  search.execution = priced_execution(o.framework, in.training, profile);

  const Cluster& c = in.cluster;
  fmt::print(
      "{}", paragraph(fmt::format(
                          "plan {} on {} ({} node{} x {} {} = {} devices), gbs {}, seq {}, {}, {}; "
                          "objective: {}",
                          in.model.name, c.name, c.nodes, c.nodes == 1 ? "" : "s",
                          c.devices_per_node, c.device.name, c.world(), in.training.global_batch,
                          in.training.seq_len, enum_name(in.training.dtype, kDtypeNames),
                          search.execution.framework, o.objective),
                      o.wide, 0));
  SearchResult r;
  if (search.objective == Objective::cost) {
    std::vector<NodeCountSearch> runs = search_node_counts(in.model, c, in.training, fixed, search);
    require_valid(runs.front().result, in.model, c, in.training, fixed, search);
    const std::optional<size_t> best = cheapest(runs);
    print_node_counts(runs, best);
    const size_t chosen = best.value_or(0);
    in.cluster = runs[chosen].cluster;
    r = std::move(runs[chosen].result);
  } else {
    r = plan_search(in.model, c, in.training, fixed, search);
  }
  if (o.explain) fmt::print("\nrejected layouts:\n{}", format_rejections(r));
  require_valid(r, in.model, c, in.training, fixed, search);
  fmt::print("{}", format_counts(r));
  if (!o.json.empty()) write_json_file(o.json, search_json(r));
  if (r.top.empty()) return report_nothing_fits(r, in, fixed, search);

  fmt::print("\n{}\n", format_top(r, o.wide));
  for (const std::string& sentence : explain_ranking(r))
    fmt::print("{}", paragraph(sentence, o.wide, 0));

  // The closed form ranks every layout; the step simulator orders the best few.
  std::vector<Resimulated> simulated;
  if (!o.no_simulate) {
    simulated = rerank_by_simulation(in.model, c, in.training, r.top, search.objective);
    fmt::print("\n{}", format_rerank(simulated, o.wide));
  }
  const Plan plan = chosen_plan(in.model, c, in.training,
                                simulated.empty() ? r.top.front() : simulated.front().ranked);
  if (!o.out.empty()) {
    write_json_file(o.out, plan_to_json(plan));
    fmt::print("\nwrote {} (estimate, simulate, execute and compare take it as their plan)\n",
               o.out);
  }
  if (!o.report_page.empty())
    write_plan_report_page(o.report_page, search_json(r), plan, search.execution);
  if (search.runs_on) print_export(*search.runs_on, plan);
  return static_cast<int>(ExitCode::ok);
}

}  // namespace

Subcommand add_plan(CLI::App& root) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* app = root.add_subcommand(
      "plan",
      "Search every layout (dp, tp, pp, cp, ep, ZeRO, micro-batch, recompute, sp, vpp, schedule), "
      "rank what fits and explain the choice");
  add_input_options(app, o->inputs, LayoutInput::none);
  add_framework_option(app, o->framework);
  app->add_option("--top", o->top_k, "How many of the best layouts to show")->check(kPositive);
  app->add_option(
      "--fix", o->fix,
      "Pin part of the layout, the rest is searched: \"tp=8,recompute=full\" (keys of --layout)");
  app->add_option(
         "--objective", o->objective,
         "time (shortest step), tokens-per-s (the same order on one cluster), or cost (least "
         "device time per token, also on half, a quarter, ... of the nodes)")
      ->check(CLI::IsMember({"time", "tokens-per-s", "cost"}));
  app->add_option("--out", o->out,
                  "Write the chosen plan as JSON (model, cluster, training, layout, prediction)");
  app->add_option("--json", o->json,
                  "Also write the search's counts, speed and top layouts as JSON to this file");
  app->add_option(
         "--export", o->export_format,
         "Search only layouts this framework runs and print the winner as its flags or config")
      ->check(CLI::IsMember({"megatron", "deepspeed"}));
  add_report_page_option(app, o->report_page);
  app->add_flag("--explain", o->explain, "List every rejected layout with its reason");
  app->add_flag(
      "--no-simulate", o->no_simulate,
      "Keep the closed form's order: do not re-rank the top layouts by simulating their steps");
  app->add_option("--threads", o->threads, "Threads pricing layouts (default: every core)")
      ->check(kPositive);
  app->add_flag("--wide", o->wide,
                "Print tables and sentences whole, one line each, however wide (default: "
                "they fit 100 columns, the layout wrapped at its commas)");
  app->add_option("--max-layouts", o->max_layouts,
                  "Refuse a search that spans more layouts than this, before pricing any (about "
                  "1 s per 300,000 layouts on 2 cores); pin fields with --fix to narrow it")
      ->capture_default_str()
      ->check(kPositive);
  app->footer(
      "MFU counts model FLOPs (Narayanan et al. 2021 eq. 3, without recomputation) over the dense "
      "bf16/fp16 "
      "peak; exit code 3 when nothing fits.");
  return {app, [o] { return run_plan(*o); }};
}

}  // namespace shardplan::cli
