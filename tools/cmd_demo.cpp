// `shardplan demo`: the whole loop on this machine's CPU cores — calibrate, plan a model for them
// with the measured profile, execute the best plan and the runners-up, compare each with its
// prediction — and one table: layout, predicted and measured step time and peak memory, the
// errors, and both rankings. Every file it reads or writes stays in --out-dir.
#include <fmt/args.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/human_format.h"
#include "core/json_reader.h"
#include "core/layout.h"
#include "core/presets.h"
#include "planner/report.h"
#include "planner/rerank.h"
#include "planner/search.h"
#include "simulator/comparison_report.h"
#include "simulator/profile_refit.h"
#include "tools/cli_inputs.h"
#include "tools/cmd_report.h"
#include "tools/compare_run.h"
#include "tools/output_file.h"
#include "tools/subcommand.h"
#include "tools/subprocess.h"

namespace shardplan::cli {

namespace {

struct DemoOptions {
  std::string model = "gpt-small";
  std::string cluster = "local-cpu";
  int64_t gbs = 8;
  int64_t seq = 256;
  std::string dtype = "fp32";  // fp32, or bf16 with fp32 master weights
  int64_t steps = 3;
  int rounds = 5;
  int top = 4;
  std::vector<std::string> layouts;  // run these instead of the planner's best
  std::string profile;               // use this profile instead of calibrating
  std::string out_dir = "out/demo";
  ReportOptions report;
  std::string report_page;  // --report: the HTML page
};

struct Run {
  Ranked planned;
  std::string plan_file, measured_file;
  std::vector<Measurement> rounds;
  Measurement measured;  // the rounds merged
  Comparison comparison;
  double spread_s = 0;  // of the measured step time
  // Predicted again with the profile refitted from the other runs' measurements (0: one run).
  double refit_predicted_s = 0;
};

// Each run predicted again with the profile refitted (calibrate --from) on the other runs'
// measurements: leave one out, so that no run is predicted from its own measurement.
void predict_from_the_others(std::vector<Run>& runs, const Profile* base) {
  if (runs.size() < 2) return;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<Measurement> others;
    std::vector<std::string> files;
    for (size_t j = 0; j < runs.size(); ++j)
      if (j != i) others.push_back(runs[j].measured), files.push_back(runs[j].measured_file);
    auto refit = std::make_unique<Profile>(refit_profile(base, others, files, nullptr));
    const Predicted p =
        predict_measured(runs[i].measured, std::move(refit), "the other layouts' refit");
    runs[i].refit_predicted_s = p.simulation.step_time_s;
  }
}

void progress(const std::string& line) {
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

// The layouts to run: the given ones, priced, or the planner's best `top` after its re-ranking by
// simulation.
std::vector<Ranked> candidates(const DemoOptions& o, const Model& m, const Cluster& c, Training& t,
                               const ExecutionOptions& x) {
  std::vector<Ranked> out;
  if (!o.layouts.empty()) {
    for (const std::string& text : o.layouts) {
      const Layout l = resolve_layout(parse_layout_string(text, "--layout"), m, c, t, "--layout");
      out.push_back({l, estimate(m, c, t, l, x), 0, static_cast<int64_t>(out.size())});
    }
    return out;
  }
  SearchOptions search;
  search.top_k = o.top;
  search.execution = x;
  const SearchResult r = plan_search(m, c, t, LayoutSpec{}, search);
  if (r.top.empty())
    throw InputError("--model", "", fmt::format("no layout of {} fits {}", m.name, c.name));
  for (const Resimulated& s : rerank_by_simulation(m, c, t, r.top, search.objective))
    out.push_back(s.ranked);
  return out;
}

// `shardplan args...`, its output in `log`; throws naming the log where it fails.
void run_logged(const std::vector<std::string>& args, const std::string& log) {
  const int rc = run_shardplan(args, log);
  if (rc != 0)
    throw InputError(log, "", fmt::format("{} exited with {}", args.front(), rc), "read " + log);
}

// `shardplan calibrate --backend cpu --ranks N --model M [more] --out profile`; returns profile.
std::string run_calibrate(const DemoOptions& o, int64_t ranks, const std::vector<std::string>& more,
                          const std::string& profile, const std::string& log) {
  std::vector<std::string> args{
      "calibrate", "--backend", "cpu",     "--ranks", std::to_string(ranks),
      "--model",   o.model,     "--dtype", o.dtype};
  args.insert(args.end(), more.begin(), more.end());
  args.insert(args.end(), {"--out", profile});
  run_logged(args, log);
  return profile;
}

std::string calibrate(const DemoOptions& o, const std::string& dir, int64_t ranks) {
  if (!o.profile.empty()) return o.profile;
  const std::string log = dir + "/calibrate.log";
  progress(
      fmt::format("[calibrate] GEMMs, kernels and collectives on {} ranks (log: {})", ranks, log));
  return run_calibrate(o, ranks, {}, dir + "/profile.json", log);
}

// A compute pass (calibrate --compute-only) after `round` over the runs' tp shares and
// micro-batches: GEMM, kernel and memory rates at that moment, for merge_compute_passes.
std::string compute_pass(const DemoOptions& o, const std::string& dir, int64_t ranks, int round,
                         const std::vector<Run>& runs) {
  std::set<int> tp, micro_batches;
  for (const Run& r : runs)
    tp.insert(r.planned.layout.tp), micro_batches.insert(r.planned.layout.micro_batch);
  const std::string log = fmt::format("{}/calibrate-round-{}.log", dir, round + 1);
  progress(fmt::format("[calibrate] GEMMs and kernels after round {} of {} (log: {})", round + 1,
                       o.rounds, log));
  return run_calibrate(o, ranks,
                       {"--tp", fmt::format("{}", fmt::join(tp, ",")), "--micro-batch",
                        fmt::format("{}", fmt::join(micro_batches, ",")), "--compute-only"},
                       fmt::format("{}/profile-round-{}.json", dir, round + 1), log);
}

// Layout i's run in `round`: its measurement in the round's file, the last round's trace beside
// it.
void execute(const DemoOptions& o, const std::string& dir, size_t i, int round, int done, int total,
             Run& run) {
  const std::string stem = fmt::format("{}/layout-{}", dir, i + 1);
  const std::string measured = fmt::format("{}-round-{}-measured.json", stem, round + 1);
  const std::string log = fmt::format("{}-round-{}-execute.log", stem, round + 1);
  progress(fmt::format("[execute {}/{}] {}: round {} of {}, {} steps (log: {})", done, total,
                       layout_label(run.planned.layout), round + 1, o.rounds, o.steps, log));
  std::vector<std::string> args{"execute", run.plan_file, "--steps", std::to_string(o.steps),
                                "--out",   measured};
  if (round + 1 == o.rounds) args.insert(args.end(), {"--trace", stem + "-measured-trace.json"});
  run_logged(args, log);
  run.rounds.push_back(read_measurement_file(measured));
  const Measurement& m = run.rounds.back();
  progress(fmt::format("  measured {} ± {}", format_seconds(median_step_time_s(m)),
                       format_seconds(step_time_spread_s(m))));
}

std::string format_demo_table(const std::vector<Run>& runs, const OrderAgreement& order,
                              bool wide) {
  std::vector<double> predicted, measured;
  for (const Run& r : runs) {
    predicted.push_back(r.comparison.predicted_step_time_s);
    measured.push_back(r.comparison.measured_step_time_s);
  }
  const std::vector<int> predicted_rank = ranks_by(predicted), measured_rank = ranks_by(measured);
  // A run's cells: the step time's (prediction, measurement, the refit, the orders), then what
  // explains its error (GEMM rate, skew, noise) and the memory's.
  struct Cells {
    std::vector<std::string> time, why;
  };
  std::vector<Cells> rows;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const Comparison& c = r.comparison;
    const bool refit = r.refit_predicted_s > 0;
    rows.push_back(
        {{format_seconds(c.predicted_step_time_s),
          format_seconds(c.measured_step_time_s) + " ± " + format_seconds(r.spread_s),
          format_signed_percent(c.step_time_error()),
          refit ? format_seconds(r.refit_predicted_s) : "-",
          refit ? format_signed_percent(relative_error(r.refit_predicted_s, c.measured_step_time_s))
                : "-",
          std::to_string(predicted_rank[i]), std::to_string(measured_rank[i])},
         {std::isnan(c.gemm_time_error()) ? "-" : format_signed_percent(c.gemm_time_error()),
          format_signed_percent(c.excess_wait_s / c.measured_step_time_s),
          format_signed_percent(c.step_noise_s / c.measured_step_time_s),
          format_mib(static_cast<double>(c.predicted_peak_bytes)),
          format_mib(static_cast<double>(c.measured_peak_bytes)),
          format_signed_percent(c.peak_error())}});
  }
  const auto cells = [](const char* row, const std::vector<std::string>& v) {
    fmt::dynamic_format_arg_store<fmt::format_context> args;
    for (const std::string& x : v) args.push_back(x);
    return fmt::vformat(row, args);
  };
  const char* time_row = "{:>10} {:>20} {:>7}  {:>10} {:>7}  {:>4} {:>4}  ";
  const char* why_row = "{:>7} {:>7} {:>7}  {:>11} {:>11} {:>7}  ";
  const std::vector<std::string> time_head{
      "predicted", "measured (± spread)", "error", "refit", "error", "pred", "meas"},
      time_head2{"step", "step", "", "others", "", "rank", "rank"},
      why_head{"GEMM", "skew", "step", "pred. peak", "meas. peak", "error"},
      why_head2{"error", "waits", "noise", "memory", "memory", ""};
  std::string out;
  if (wide) {
    size_t width = 6;
    for (const Run& r : runs) width = std::max(width, layout_label(r.planned.layout).size());
    const auto line = [&](const std::string& layout, size_t row) {
      const Cells& c = rows[row];
      return fmt::format("{:<{}}  {}{}\n", layout, width, cells(time_row, c.time),
                         cells(why_row, c.why));
    };
    out += fmt::format("{:<{}}  {}{}\n", "layout", width, cells(time_row, time_head),
                       cells(why_row, why_head));
    out += fmt::format("{:<{}}  {}{}\n", "", width, cells(time_row, time_head2),
                       cells(why_row, why_head2));
    for (size_t i = 0; i < runs.size(); ++i) out += line(layout_label(runs[i].planned.layout), i);
  } else {
    // Two tables that fit kTableColumns, the layout last in each, wrapped at its commas.
    for (const auto& [row, head, head2, part] :
         {std::tuple{time_row, &time_head, &time_head2, &Cells::time},
          std::tuple{why_row, &why_head, &why_head2, &Cells::why}}) {
      if (!out.empty()) out += "\n";
      std::string second = cells(row, *head2);
      second.erase(second.find_last_not_of(' ') + 1);
      out += cells(row, *head) + "layout\n" + second + "\n";
      for (size_t i = 0; i < runs.size(); ++i)
        out +=
            row_with_wrapped_last(cells(row, rows[i].*part), layout_label(runs[i].planned.layout));
    }
  }
  std::vector<std::string> notes{fmt::format(
      "order: the prediction orders {} of the {} pairs of layouts whose measured step times "
      "differ by more than their spreads as measured",
      order.agreeing_pairs, order.distinguishable_pairs)};
  for (const auto& [i, j] : order.disagreeing)
    notes.push_back(fmt::format("  measured {} faster than {}, predicted not",
                                layout_label(runs[i].planned.layout),
                                layout_label(runs[j].planned.layout)));
  notes.insert(
      notes.end(),
      {"spread: half the interquartile range of the measured steps (after the warm-up)",
       "GEMM error: the profile's time for the run's GEMMs against their time measured in the run "
       "(every rank): how far the machine's GEMM rate in the run strayed from the calibration's",
       "skew waits: the ranks' time in collectives waiting for slower ranks beyond the "
       "prediction's, as a share of the measured step (mean over the ranks): how far the ranks' "
       "speeds in the run strayed apart",
       "step noise: the measured median step less the sum of its parts' medians (each action's "
       "and the time outside them), as a share of the step (mean over the ranks): noise inside "
       "the steps, of which the cost model, pricing medians, carries only the profile's noise",
       "refit others: predicted with the profile refitted (calibrate --from) on the other "
       "layouts' runs"});
  out += "\n";
  for (const std::string& note : notes) out += paragraph(note, wide);
  return out;
}

int run_demo(const DemoOptions& o) {
  std::filesystem::create_directories(o.out_dir);
  if (!o.report.json_file.empty()) check_output_folder(o.report.json_file);
  if (!o.report_page.empty()) check_output_folder(o.report_page);
  const Model model = load_model(o.model);
  Cluster cluster = load_cluster(o.cluster, std::nullopt);
  Training training = with_compute_dtype(Training{}, *enum_from_name(o.dtype, kDtypeNames));
  training.global_batch = o.gbs;
  training.seq_len = o.seq;
  validate_training(training, "demo");

  InputOptions profile_option;
  profile_option.profile_file = calibrate(o, o.out_dir, cluster.world());
  const std::optional<Profile> profile = apply_profile_option(profile_option, cluster, training);
  const ExecutionOptions x = priced_execution(kDefaultFramework, training, profile);

  progress(fmt::format("[plan] {} on {} ({} ranks), gbs {}, seq {}, {}, priced with {}", model.name,
                       cluster.name, cluster.world(), o.gbs, o.seq, o.dtype,
                       profile_option.profile_file));
  std::vector<Run> runs;
  for (Ranked& r : candidates(o, model, cluster, training, x)) {
    Run run;
    run.planned = std::move(r);
    runs.push_back(std::move(run));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& run = runs[i];
    progress(fmt::format("  {}. {}: estimated {}", i + 1, layout_label(run.planned.layout),
                         format_seconds(run.planned.estimate.step_time_s)));
    const Plan plan = chosen_plan(model, cluster, training, run.planned);
    run.plan_file = fmt::format("{}/layout-{}-plan.json", o.out_dir, i + 1);
    write_json_file(run.plan_file, plan_to_json(plan));
  }
  // Every layout once a round, each round starting one layout later, so that the machine's drift
  // over the minutes the runs take falls on every layout alike (interleaved trials: merge_runs).
  // Where demo calibrated, a compute pass follows every round, and the runs are predicted with
  // the compute rates' medians over the calibration and these passes (merge_compute_passes): the
  // calibration too is interleaved with the runs, so that a machine whose speed drifts over the
  // minutes they take is priced as it ran them (here, the passes' median GEMM rate ranged 0.88 to
  // 1.22 times the calibration's within one 5-minute demo, measured 2026-11-23).
  const int total = o.rounds * static_cast<int>(runs.size());
  std::vector<Profile> passes;
  std::vector<std::string> pass_files;
  for (int round = 0, done = 0; round < o.rounds; ++round) {
    for (size_t k = 0; k < runs.size(); ++k) {
      const size_t i = (static_cast<size_t>(round) + k) % runs.size();
      execute(o, o.out_dir, i, round, ++done, total, runs[i]);
    }
    if (!o.profile.empty()) continue;
    pass_files.push_back(compute_pass(o, o.out_dir, cluster.world(), round, runs));
    passes.push_back(read_profile_file(pass_files.back()));
  }
  std::string priced_with = profile_option.profile_file;
  std::optional<Profile> merged = profile;
  if (!passes.empty()) {
    merged = merge_compute_passes(*profile, passes, pass_files);
    priced_with = o.out_dir + "/profile-interleaved.json";
    write_json_file(priced_with, profile_to_json(*merged));
    progress(
        fmt::format("[calibrate] compute rates: medians over the calibration and {} passes "
                    "between the rounds, slowed by the machine's noise ({}) ({})",
                    passes.size(), format_signed_percent(merged->noise), priced_with));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& run = runs[i];
    run.measured = merge_runs(run.rounds);
    run.measured_file = fmt::format("{}/layout-{}-measured.json", o.out_dir, i + 1);
    write_json_file(run.measured_file, measurement_to_json(run.measured));
    const Predicted predicted = predict_measured(run.measured, priced_with);
    run.comparison = compare_run(predicted.simulation, run.measured, predicted.gemms);
    run.spread_s = step_time_spread_s(run.measured);
    write_json_file(fmt::format("{}/layout-{}-compare.json", o.out_dir, i + 1),
                    comparison_to_json(run.comparison));
    const double gemm_error = run.comparison.gemm_time_error();
    const Comparison& c = run.comparison;
    progress(fmt::format(
        "[compare {}/{}] {}:\n  measured {} ± {} over {} rounds, predicted {} ({})\n  {}skew "
        "waits {}; step noise {}",
        i + 1, runs.size(), layout_label(run.planned.layout),
        format_seconds(c.measured_step_time_s), format_seconds(run.spread_s), o.rounds,
        format_seconds(c.predicted_step_time_s), format_signed_percent(c.step_time_error()),
        std::isnan(gemm_error) ? "" : fmt::format("GEMMs {}; ", format_signed_percent(gemm_error)),
        format_signed_percent(c.excess_wait_s / c.measured_step_time_s),
        format_signed_percent(c.step_noise_s / c.measured_step_time_s)));
  }

  predict_from_the_others(runs, merged ? &*merged : nullptr);
  std::vector<double> predicted, measured, spread;
  nlohmann::json rows = nlohmann::json::array();
  for (const Run& r : runs) {
    predicted.push_back(r.comparison.predicted_step_time_s);
    measured.push_back(r.comparison.measured_step_time_s);
    spread.push_back(r.spread_s);
    nlohmann::json row = comparison_row_json(r.comparison);
    row["measured_step_time_spread_s"] = r.spread_s;
    if (r.refit_predicted_s > 0) row["refit_predicted_step_time_s"] = r.refit_predicted_s;
    rows.push_back(row);
  }
  const OrderAgreement order = order_agreement(predicted, measured, spread);
  const nlohmann::json j{{"rows", rows},
                         {"order",
                          {{"distinguishable_pairs", order.distinguishable_pairs},
                           {"agreeing_pairs", order.agreeing_pairs}}},
                         {"profile", priced_with}};
  emit_report(o.report, j, "\n" + format_demo_table(runs, order, o.report.wide));
  if (!o.report_page.empty()) {
    // The best layout's plan and measured timeline, and every layout's comparison.
    std::vector<std::string> files{runs.front().plan_file,
                                   o.out_dir + "/layout-1-measured-trace.json"};
    for (size_t i = 0; i < runs.size(); ++i)
      files.push_back(fmt::format("{}/layout-{}-compare.json", o.out_dir, i + 1));
    write_report_page(o.report_page, {{"demo --json", report::InputKind::demo, j}}, files);
  }
  return static_cast<int>(ExitCode::ok);
}

}  // namespace

Subcommand add_demo(CLI::App& root) {
  auto o = std::make_shared<DemoOptions>();
  CLI::App* app = root.add_subcommand(
      "demo",
      "The whole loop on this machine's CPU cores: calibrate, plan the model for them with the "
      "measured profile, execute the best plan and the runners-up, compare each with its "
      "prediction, and print one table (predicted and measured step time and peak memory, "
      "errors, both rankings). A few minutes for gpt-small on 2 cores");
  app->add_option("--model,-m", o->model, "Model (preset or JSON)")->capture_default_str();
  app->add_option("--cluster,-c", o->cluster, "The cluster describing this machine")
      ->capture_default_str();
  app->add_option("--gbs", o->gbs, "Global batch in sequences")
      ->capture_default_str()
      ->check(kPositive);
  app->add_option("--seq", o->seq, "Tokens per sequence")->capture_default_str()->check(kPositive);
  app->add_option("--dtype", o->dtype,
                  "fp32, or bf16 with fp32 master weights (bf16 weights, activations and "
                  "gradients; the loss and Adam in fp32), calibrated, planned and run as such")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app->add_option("--steps", o->steps,
                  "Training steps per layout and round (the first of each is warm-up)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  app->add_option("--rounds", o->rounds,
                  "Runs of every layout, interleaved: each round runs every layout once and then "
                  "(without --profile) times their GEMMs and kernels again, so that the machine's "
                  "drift meets the layouts and the calibration alike; their steps are merged, the "
                  "rates' medians price them")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app->add_option("--top", o->top, "How many of the planner's best layouts to run")
      ->capture_default_str()
      ->check(kPositive);
  app->add_option("--layout,-l", o->layouts,
                  "Run this layout instead of the planner's best (repeatable, e.g. -l dp=2 -l "
                  "tp=2,sp=1)");
  app->add_option("--profile", o->profile, "Use this calibration profile instead of calibrating");
  app->add_option("--out-dir", o->out_dir,
                  "Folder for the profile, plans, measurements, traces, comparisons and logs")
      ->capture_default_str();
  add_report_options(app, o->report);
  add_report_page_option(app, o->report_page);
  return {app, [o] { return run_demo(*o); }};
}

}  // namespace shardplan::cli
