// `shardplan calibrate --backend cpu|cuda [--ranks N] --out profile.json`. On several ranks it runs
// either under a launcher (`mpirun -np 2 shardplan calibrate ...`: the ranks mpirun started) or
// by itself (`--ranks N`, by default one rank per core, or per GPU with cuda: it re-runs the
// command under mpirun). An error on any rank aborts the job (tools/rank_errors.h).

#include <fmt/chrono.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/calibrate_cpu.h"
#include "calibrate/calibrate_cuda.h"
#include "core/error.h"
#include "core/json_reader.h"
#include "core/measurement.h"
#include "core/presets.h"
#include "core/profile.h"
#include "executor/runtime/cuda_devices.h"
#include "executor/runtime/mpi_launch.h"
#include "simulator/profile_refit.h"
#include "tools/cli_inputs.h"
#include "tools/output_file.h"
#include "tools/rank_errors.h"
#include "tools/subcommand.h"

namespace shardplan::cli {

namespace {

struct CalibrateCliOptions {
  std::string backend;
  std::string dtype = "fp32";
  bool tf32 = false;
  std::string out;
  std::optional<int> ranks;
  std::optional<int64_t> max_bytes;
  std::vector<std::string> models{"gpt-tiny", "gpt-small"};
  std::vector<std::string> from;  // measured.json files to refit from
  std::string base_profile;       // the profile they refine
  CalibrateOptions calibrate;
};

void write_profile(const Profile& p, const std::string& out, const std::string& how) {
  nlohmann::json j = profile_to_json(p);
  j["source"] =
      fmt::format("shardplan calibrate {}, {:%Y-%m-%d %H:%M} UTC", how,
                  std::chrono::floor<std::chrono::minutes>(std::chrono::system_clock::now()));
  write_json_file(out, j);
  fmt::print("# wrote {}\n", out);
}

// --from: the profile refitted from the executor's measurements (simulator/profile_refit.h).
int run_refit(const CalibrateCliOptions& o) {
  std::vector<Measurement> runs;
  for (const std::string& f : o.from) runs.push_back(read_measurement_file(f));
  const std::optional<Profile> base =
      o.base_profile.empty() ? std::nullopt : std::optional(read_profile_file(o.base_profile));
  RefitReport report;
  const Profile p = refit_profile(base ? &*base : nullptr, runs, o.from, &report);
  fmt::print("{}", format_refit_report(report));
  std::string how = "--from";
  for (const std::string& f : o.from) how += " " + f;
  if (base) how += " --profile " + o.base_profile;
  write_profile(p, o.out, how);
  return 0;
}

// One rank per core (cpu) or per GPU (cuda) unless --ranks says otherwise.
int default_ranks(const CalibrateCliOptions& o) {
  if (o.backend == "cuda") return query_cuda_devices().count;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int run_calibrate(CalibrateCliOptions& o) {
  check_output_folder(o.out);
  if (!o.from.empty()) return run_refit(o);
  if (o.backend.empty())
    throw InputError("--backend", "", "not given", "--backend cpu, or --from measured.json");
  const bool cuda = o.backend == "cuda";
  if (o.tf32 && !cuda)
    throw InputError("--tf32", "", "needs --backend cuda", "leave --tf32 out on the cpu backend");
  o.calibrate.dtype = *enum_from_name(o.dtype, kDtypeNames);
  if (o.tf32 && o.calibrate.dtype != Dtype::fp32)
    throw InputError("--tf32", "", "times fp32 GEMMs on TF32 tensor cores, not " + o.dtype,
                     "leave --tf32 out with --dtype " + o.dtype);
  if (o.calibrate.compute_only && cuda)
    throw InputError("--compute-only", "", "needs --backend cpu",
                     "leave --compute-only out on the cuda backend");
  if (cuda) require_cuda_device("--backend");  // before mpirun starts any rank
  for (const auto& name : o.models) o.calibrate.models.push_back(load_model(name));
  o.calibrate.sweep.max_bytes = o.max_bytes.value_or(sweep_max_bytes(o.calibrate.models));

  if (!started_by_mpirun()) {
    const int ranks = o.ranks.value_or(default_ranks(o));
    validate_calibrate_options(o.calibrate, ranks);  // once, here, rather than on every rank
    if (ranks > 1) return rerun_under_mpirun(ranks);
  }
  MpiSession mpi;
  if (o.ranks && *o.ranks != mpi.size())
    throw InputError("--ranks", "",
                     fmt::format("{}, but mpirun started {} ranks", *o.ranks, mpi.size()),
                     "leave --ranks out under mpirun, or run without mpirun");
  abort_job_on_error(mpi.rank(), [&] {
    const CudaSettings settings{o.tf32 ? MatmulPrecision::tf32 : MatmulPrecision::fp32};
    const Profile p = cuda ? calibrate_cuda(o.calibrate, settings, MPI_COMM_WORLD, stdout)
                           : calibrate_cpu(o.calibrate, MPI_COMM_WORLD, stdout);
    if (mpi.rank() == 0)
      write_profile(p, o.out,
                    fmt::format("--backend {} --dtype {} --ranks {}{}", o.backend, o.dtype, p.ranks,
                                o.calibrate.compute_only ? " --compute-only" : ""));
  });
  return 0;
}

}  // namespace

Subcommand add_calibrate(CLI::App& root) {
  auto o = std::make_shared<CalibrateCliOptions>();
  CLI::App* app = root.add_subcommand(
      "calibrate",
      "Measure this machine (GEMMs over a model's layer shapes, the executor's memory-bound "
      "kernels, memory bandwidth, every collective over sizes and group sizes, printed as "
      "nccl-tests prints them; cpu: Eigen, STREAM and MPI, and the machine's noise; cuda: cuBLAS, "
      "a device copy and NCCL) and write a profile for --profile. Runs on the ranks mpirun started "
      "(mpirun -np 2 shardplan calibrate ...), or re-runs itself under mpirun -np N (--ranks N). "
      "With --from, refits a profile from what `execute` measured instead");
  app->add_option("--backend", o->backend,
                  "cpu (Eigen + MPI, one rank per core) or cuda (cuBLAS + NCCL, one rank per GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--dtype", o->dtype,
                  "The GEMMs' and kernels' dtype, as `execute` runs it: fp32, or bf16 (bf16 "
                  "operands accumulating in fp32, the loss and Adam in fp32); plans of that dtype "
                  "price with the profile. The collectives are swept in fp32, and a bf16 "
                  "collective is priced by its bytes")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app->add_flag("--tf32", o->tf32, "cuda: time the fp32 GEMMs on TF32 tensor cores");
  app->add_option("--from", o->from,
                  "Refit from these measured.json files (`execute --out`): each compute class's "
                  "measured time rescales the GEMM shapes and kernel sizes priced in it (where "
                  "the run timed its GEMMs, they take their own measured ratio and the kernels "
                  "the rest), each collective's own time (its fastest member's) joins its sweep, "
                  "and the optimizer step's rate is taken as measured")
      ->excludes("--backend");
  app->add_option("--profile", o->base_profile,
                  "With --from: the profile to refine (default: the datasheet figures of the "
                  "run's cluster)")
      ->needs("--from");
  app->add_option("--out,-o", o->out, "Where to write the profile JSON")->required();
  app->add_option(
         "--ranks", o->ranks,
         "Ranks to measure on; outside mpirun, re-runs under mpirun -np N (default: one per core, "
         "or per GPU with --backend cuda)")
      ->check(kPositive);
  app->add_option("--model,-m", o->models,
                  "Models whose layer GEMM shapes to time (presets or JSON)")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--tp", o->calibrate.tp, "Tensor-parallel shares of those layers to time")
      ->delimiter(',')
      ->capture_default_str();
  app->add_option("--micro-batch", o->calibrate.micro_batches, "Sequences per micro-batch to time")
      ->delimiter(',')
      ->capture_default_str()
      ->check(kPositive);
  app->add_option("--seq", o->calibrate.seq,
                  "Tokens per sequence (default: the model's max_position_embeddings)")
      ->check(kPositive);
  app->add_flag(
         "--compute-only", o->calibrate.compute_only,
         "cpu: one pass over the GEMMs and kernels, STREAM and the priced noise; no collectives "
         "(the passes `demo` takes between its rounds)")
      ->excludes("--from");
  app->add_option("--max-bytes", o->max_bytes,
                  "Largest collective size in bytes (nccl-tests' -e; the sweep starts at 8 B, "
                  "doubling, and ends at this size; default: a model's fp32 gradients, 4 MiB at "
                  "least)")
      ->check(kPositive);
  return {app, [o] { return run_calibrate(*o); }};
}

}  // namespace shardplan::cli
