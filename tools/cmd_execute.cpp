// `shardplan execute`: run a plan's training steps for real on this machine's ranks (CPU: Eigen
// and MPI; CUDA: cuBLAS, kernels and NCCL; in fp32, or in bf16 with fp32 master weights) and
// report loss, step time and tokens/s per step, every rank's memory and every action's timing
// (--out measured.json, --trace). Runs on the ranks mpirun started, or re-runs itself under `mpirun
// -np <the plan's world>`.
//
// Faults: an exception on any rank prints "shardplan: error: rank R: <cause>" and calls
// MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank (none is left waiting in a collective) and
// makes mpirun exit 1. A rank that dies without a word (SIGKILL, a crash) makes Open MPI's mpirun
// kill the others and exit non-zero. A rank that stops or hangs leaves the others waiting: their
// watchdog (executor/runtime/watchdog.h) ends the job past --timeout, naming the wait and the
// ranks that had not arrived.
//
// Checkpoints (--checkpoint-dir, --checkpoint-every, --resume; executor/state/checkpoint.h) hold
// the full model in the single-rank layout, gathered to rank 0, so a run resumes under any layout.

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/human_format.h"
#include "core/json_reader.h"
#include "core/presets.h"
#include "executor/data.h"
#include "executor/interpreter.h"
#include "executor/runtime/cuda_devices.h"
#include "executor/runtime/mpi_launch.h"
#include "executor/runtime/watchdog.h"
#include "executor/state/checkpoint.h"
#include "executor/state/param_layout.h"
#include "simulator/estimate.h"
#include "tools/cli_inputs.h"
#include "tools/execute_report.h"
#include "tools/output_file.h"
#include "tools/rank_errors.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct ExecuteOptions {
  InputOptions inputs;
  int64_t steps = 10;
  std::string data;
  uint64_t seed = InterpreterSettings{}.seed;
  std::string out;
  std::string trace;
  std::string backend = "cpu";
  bool tf32 = false;  // --tf32: the cuda backend's fp32 GEMMs on TF32 tensor cores
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: never
  bool resume = false;
  std::string inject_fault;  // hidden, for the fault tests: "rank:step:throw|kill|stop"
  double timeout_s = 0;      // 0: derived from the predicted step (watchdog_deadline)
};

// "rank:step:kind" with step counted from 1 as printed; InjectedFault counts steps from 0.
InjectedFault parse_fault(const std::string& spec) {
  InjectedFault f;
  if (spec.empty()) return f;
  const size_t a = spec.find(':'), b = spec.find(':', a == std::string::npos ? a : a + 1);
  const InputError bad("--inject-fault", "", "'" + spec + "' is not rank:step:kind",
                       "e.g. 1:2:throw, 0:1:kill or 1:2:stop");
  if (b == std::string::npos) throw bad;
  const std::string kind = spec.substr(b + 1);
  if (kind == "kill")
    f.kind = FaultKind::kill;
  else if (kind == "stop")
    f.kind = FaultKind::stop;
  else if (kind != "throw")
    throw bad;
  try {
    f.rank = std::stoll(spec.substr(0, a));
    f.step = std::stoll(spec.substr(a + 1, b - a - 1)) - 1;
  } catch (const std::exception&) {
    throw bad;
  }
  return f;
}

// The executor trains fp32, or bf16 with fp32 master weights (runs_precision); a plan in another
// precision runs in fp32 (its prediction, made for another precision, dropped).
Plan executed_plan(Plan p) {
  if (runs_precision(p.training)) return p;
  p.training.dtype = p.training.grad_dtype = Dtype::fp32;
  p.training.master_weights = false;
  p.prediction = nlohmann::json::object();
  return p;
}

std::string precision_label(const Training& t, const ExecuteOptions& o) {
  if (t.dtype == Dtype::bf16) return "bf16, fp32 master weights";
  return o.tf32 && o.backend == "cuda" ? "fp32, tf32 GEMMs" : "fp32";
}

// Every rank's measured memory as a table, one row a rank, to fit kTableColumns.
void print_memory(const std::vector<MeasuredMemory>& memory) {
  fmt::print("memory (peak = parameters + gradients + optimizer + activations + other)\n");
  fmt::print("  {:>4} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13}\n", "rank", "peak", "parameters",
             "gradients", "optimizer", "activations", "other");
  const auto mib = [](int64_t bytes) { return format_mib(static_cast<double>(bytes)); };
  for (size_t r = 0; r < memory.size(); ++r) {
    const MeasuredMemory& m = memory[r];
    fmt::print("  {:>4} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13}\n", r, mib(m.peak_bytes),
               mib(m.parameters_bytes), mib(m.gradients_bytes), mib(m.optimizer_bytes),
               mib(m.activations_bytes), mib(m.other_bytes));
  }
}

// The latest checkpoint's manifest, checked against the plan's model.
CheckpointInfo resumed_checkpoint(const ExecuteOptions& o, const Plan& p) {
  return check_checkpoint_model(o.checkpoint_dir, p.model.name,
                                param_layout(p.model, whole_model(p.model)).total);
}

// Every rank: trains o.steps steps (after the checkpoint's, with --resume); rank 0 prints them,
// saves the checkpoints and writes the files.
void execute_steps(const ExecuteOptions& o, const Plan& p, int rank) {
  const TextTokens text = load_text_tokens(
      o.data.empty() ? data_dir() + "/" + kDefaultTextFile : o.data, p.training.seq_len + 1);
  const bool root = rank == 0;
  InterpreterSettings settings;
  settings.seed = o.seed;
  settings.fault = parse_fault(o.inject_fault);
  settings.backend = o.backend == "cuda" ? Backend::cuda : Backend::cpu;
  settings.cuda.matmul = o.tf32 ? MatmulPrecision::tf32 : MatmulPrecision::fp32;
  int64_t done = 0;  // steps taken before this run
  if (o.resume) {
    const CheckpointInfo c = resumed_checkpoint(o, p);
    done = c.step;
    settings.seed = c.seed;  // the data order continues
  }
  RankInterpreter run(p.model, p.training, p.layout, text, settings);
  if (o.resume) {
    run.load_full_state(root ? load_latest_checkpoint(o.checkpoint_dir) : FullState{});
    if (root)
      fmt::print("# resumed from {} at step {} (seed {})\n", o.checkpoint_dir, done, settings.seed);
  }
  Measurement record;
  record.plan = p;
  record.backend = settings.backend;
  if (root) {
    for (int64_t r = 0; r < p.layout.world(); ++r)
      record.programs.push_back(build_program(p.model, p.training, p.layout, r));
    fmt::print("{}: {} on {} ranks ({}, {}), {} steps of {} x {} tokens, data {}\n",
               to_string(p.layout), p.model.name, p.layout.world(), o.backend,
               precision_label(p.training, o), o.steps, p.training.global_batch, p.training.seq_len,
               text.path);
    fmt::print("{:>5}  {:>8}  {:>12}  {:>12}\n", "step", "loss", "step_time_s", "tokens_per_s");
    std::fflush(stdout);
  }
  const auto tokens = static_cast<double>(p.training.tokens_per_step());
  for (int64_t step = done + 1; step <= done + o.steps; ++step) {
    StepMeasurement m = run.run_step(step - 1);
    std::vector<std::vector<ActionTiming>> timings = gather_timings(m.timings);
    gather_gemms(m.gemms, record.gemms);
    if (root) {
      const StepRecord s{step, m.loss, m.step_time_s, tokens / m.step_time_s};
      fmt::print("{:>5}  {:>8.4f}  {:>12.4f}  {:>12.0f}\n", s.step, s.loss, s.step_time_s,
                 s.tokens_per_s);
      std::fflush(stdout);
      record.steps.push_back(s);
      record.timings.push_back(std::move(timings));
    }
    if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0) {
      const FullState state = run.gather_full_state();
      if (root) {
        const CheckpointInfo info{p.model.name, static_cast<int64_t>(state.params.size()), step,
                                  settings.seed, to_string(p.layout)};
        fmt::print("# checkpoint {}\n", save_checkpoint(o.checkpoint_dir, info, state));
        std::fflush(stdout);
      }
    }
  }
  record.memory = gather_memory(run.allocator());
  if (!root) return;
  record.warmup_steps = warmup_steps(o.steps);
  const double median_s = median_step_time_s(record);
  fmt::print("median of steps {}..{}{}: step_time_s {:.4f}, tokens_per_s {:.0f}\n",
             done + record.warmup_steps + 1, done + o.steps,
             record.warmup_steps > 0 ? " (step 1 is warm-up)" : "", median_s, tokens / median_s);
  print_memory(record.memory);
  if (!o.out.empty()) {
    write_json_file(o.out, measurement_to_json(record));
    fmt::print("# wrote {}\n", o.out);
  }
  if (!o.trace.empty()) {
    write_json_file(o.trace, measured_trace(record), JsonStyle::compact);
    fmt::print("# wrote {}\n", o.trace);
  }
}

// The watchdog's deadline on every wait: --timeout, or 20 steps as predicted (the plan's
// prediction, else the estimate on its cluster) and at least a minute, which no healthy wait
// reaches: the first step also allocates every buffer, and ranks oversubscribing the cores run in
// turns. Throws what estimate() throws.
std::pair<double, std::string> watchdog_deadline(const ExecuteOptions& o, const Plan& p) {
  constexpr double kSteps = 20, kAtLeast_s = 60;
  if (o.timeout_s > 0) return {o.timeout_s, fmt::format("--timeout {:g}", o.timeout_s)};
  double step_s = p.prediction.value("step_time_s", 0.0);
  if (!(step_s > 0)) step_s = estimate(p.model, p.cluster, p.training, p.layout, {}).step_time_s;
  const double deadline_s = std::max(kAtLeast_s, kSteps * step_s);
  return {deadline_s, fmt::format("the deadline: {:g} predicted steps of {}, at least {:g} s; "
                                  "--timeout sets it",
                                  kSteps, format_seconds(step_s), kAtLeast_s)};
}

// One rank of the job. Errors end the whole job at once (see the top of the file).
int run_rank(const ExecuteOptions& o, const Plan& p) {
  MpiSession mpi;
  if (mpi.size() != p.layout.world()) {
    if (mpi.rank() != 0) return static_cast<int>(ExitCode::user_error);
    throw InputError(
        o.inputs.plan_file.empty() ? "--layout" : o.inputs.plan_file, "layout",
        fmt::format("needs {} ranks (dp × tp × pp × cp), but mpirun started {}", p.layout.world(),
                    mpi.size()),
        fmt::format("run it under mpirun -np {}, or without mpirun", p.layout.world()));
  }
  abort_job_on_error(mpi.rank(), [&] {
    const auto [deadline_s, reason] = watchdog_deadline(o, p);
    const Watchdog watchdog(deadline_s, reason);
    execute_steps(o, p, mpi.rank());
  });
  return 0;
}

int run_execute(const ExecuteOptions& o) {
  if (o.tf32 && o.backend != "cuda")
    throw InputError("--tf32", "", "needs --backend cuda", "leave --tf32 out on the cpu backend");
  if (o.backend == "cuda") require_cuda_device("--backend");  // before mpirun starts any rank
  const Plan given = resolve_plan(o.inputs);
  if (!runs_precision(given.training) && !started_by_mpirun())
    fmt::print(
        "# the {} backend runs fp32, or bf16 with fp32 master weights; the plan's dtype {}, "
        "grad_dtype {}, master_weights {} is priced by estimate and run in fp32\n",
        o.backend, enum_name(given.training.dtype, kDtypeNames),
        enum_name(given.training.grad_dtype, kDtypeNames), given.training.master_weights);
  const Plan p = executed_plan(given);
  if (o.tf32 && p.training.dtype != Dtype::fp32)
    throw InputError("--tf32", "",
                     "times fp32 GEMMs on TF32 tensor cores, and the plan trains in " +
                         std::string(enum_name(p.training.dtype, kDtypeNames)),
                     "leave --tf32 out, or plan with --dtype fp32");
  parse_fault(o.inject_fault);
  if (p.model.vocab < kByteVocab)
    throw InputError(p.model.name, "vocab_size",
                     fmt::format("{} is below {}: the executor trains on byte tokens",
                                 p.model.vocab, kByteVocab),
                     "use a byte-level model such as gpt-tiny or gpt-small");
  for (const std::string* file : {&o.out, &o.trace})
    if (!file->empty()) check_output_folder(*file);
  if ((o.resume || o.checkpoint_every > 0) && o.checkpoint_dir.empty())
    throw InputError(o.resume ? "--resume" : "--checkpoint-every", "", "needs --checkpoint-dir",
                     "name the folder that holds the checkpoints");
  if (o.resume) resumed_checkpoint(o, p);
  if (!started_by_mpirun() && p.layout.world() > 1)
    return rerun_under_mpirun(static_cast<int>(p.layout.world()));
  return run_rank(o, p);
}

}  // namespace

Subcommand add_execute(CLI::App& root) {
  auto o = std::make_shared<ExecuteOptions>();
  CLI::App* app = root.add_subcommand(
      "execute",
      "Train a plan's layout for real on this machine (cpu: Eigen + MPI, one rank per device; "
      "cuda: cuBLAS, CUDA kernels and NCCL, one MPI rank per GPU), in the plan's dtype: fp32, or "
      "bf16 with fp32 master weights and an fp32 loss (other dtypes run in fp32), "
      "and print loss, step time and tokens/s per step (step 1 is warm-up: medians leave it out) "
      "and each rank's peak memory. Runs on the ranks mpirun started, or re-runs itself under "
      "mpirun -np <the plan's device count>. An error on any rank aborts the whole job (exit 1)");
  app->add_option("plan", o->inputs.plan_file,
                  "A plan JSON (instead of --model/--cluster/--layout)");
  add_input_options(app, o->inputs, LayoutInput::optional);
  app->add_option("--steps", o->steps, "Training steps to run")
      ->capture_default_str()
      ->check(kPositive);
  app->add_option("--data", o->data,
                  std::string("Text to train on, one token per byte (default: ") +
                      kDefaultTextFile + " in the data folder)");
  app->add_option("--seed", o->seed, "Seed of the initial parameters and of the data order")
      ->capture_default_str();
  app->add_option("--out,-o", o->out,
                  "Write measured.json: steps, per-rank memory, every action's timing, the plan");
  app->add_option("--trace", o->trace,
                  "Write the last step's timeline as Chrome trace JSON (as simulate's)");
  app->add_option("--backend", o->backend,
                  "cpu (Eigen + MPI) or cuda (cuBLAS, CUDA kernels, NCCL; one rank per GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_flag("--tf32", o->tf32,
                "cuda: run the fp32 GEMMs on TF32 tensor cores (10-bit mantissa inputs, fp32 "
                "accumulation)");
  app->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Folder of the checkpoints: step-N/ (full parameters and Adam state in the "
                  "single-rank layout, any layout resumes from them) and latest");
  app->add_option(
         "--checkpoint-every", o->checkpoint_every,
         "Save a checkpoint every K steps (atomically: a crash mid-save keeps the last one)")
      ->check(kPositive);
  app->add_flag("--resume", o->resume,
                "Continue from the latest checkpoint in --checkpoint-dir (its seed and step; "
                "--steps more steps), under this layout");
  app->add_option("--timeout", o->timeout_s,
                  "Seconds a rank may wait in one collective or receive before the job is ended, "
                  "naming the wait and the ranks that had not arrived (default: 20 predicted "
                  "steps, at least 60)")
      ->check(kPositive);
  app->add_option("--inject-fault", o->inject_fault,
                  "rank:step:throw|kill|stop — make a rank fail or stop halfway through a step "
                  "(tests)")
      ->group("");
  return {app, [o] { return run_execute(*o); }};
}

}  // namespace shardplan::cli
