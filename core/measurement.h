// What a real run measured (`shardplan execute --out measured.json`, docs/conventions.md): the
// plan as it ran, loss and time of every step, every rank's memory at its peak, and when every
// action of every rank's program ran in every step. Written by the executor's driver, read back
// by `compare` and `calibrate --from`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/profile.h"
#include "core/schedule.h"

namespace shardplan {

struct StepRecord {
  int64_t step = 0;  // from 1
  double loss = 0;
  double step_time_s = 0;  // slowest rank, barrier to barrier
  double tokens_per_s = 0;
};

// A rank's memory at its total's peak, itemised as the cost model itemises it (other_bytes: the
// executor's buffers).
struct MeasuredMemory {
  int64_t parameters_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0, activations_bytes = 0,
          other_bytes = 0, peak_bytes = 0;
};

// The GEMMs a rank ran in its compute actions: the same FLOPs every step, and the time they took in
// each step, timed around every GEMM call (0 where the backend does not time GEMMs one by one: a
// GPU's run asynchronously on a stream). Set apart from the rest of the actions, they tell a GEMM
// rate that differs from the calibration's from other work that the cost model misprices.
struct MeasuredGemms {
  double flops_per_step = 0;
  std::vector<double> seconds;  // by step
};

struct Measurement {
  Plan plan;  // as it ran
  Backend backend = Backend::cpu;
  std::vector<Program> programs;  // every rank's, by rank: build_program of the plan
  std::vector<StepRecord> steps;
  std::vector<std::vector<std::vector<ActionTiming>>> timings;  // [step][rank][action]
  std::vector<MeasuredMemory> memory;                           // by rank
  std::vector<MeasuredGemms> gemms;  // by rank; empty where the run did not record them
  int64_t warmup_steps = 0;          // leading steps the medians leave out
};

// Steps whose times the medians leave out: the first step pays for first-touch page faults and the
// allocator's cache filling (executor/state/tensor_allocator.h).
inline constexpr int64_t kWarmupSteps = 1;

// The leading steps left out of a run of `steps` steps: kWarmupSteps, unless that leaves none.
int64_t warmup_steps(int64_t steps);

// Runs of one plan taken at different times (interleaved with other runs, so that each meets the
// machine's drift as the others do: Abedi & Brecht 2017, "Conducting repeatable experiments in
// highly variable cloud computing environments", randomized multiple interleaved trials) as one
// measurement: every run's steps after its warm-up, in the order given, renumbered, with no
// warm-up left; each rank's memory from the run where its peak was highest. The runs must have
// the same plan and programs, and GEMM times all or none.
Measurement merge_runs(const std::vector<Measurement>& runs);

// The median step time of the steps after the warm-up.
double median_step_time_s(const Measurement& m);

// How much the step time varied after the warm-up: half the distance between its first and third
// quartiles (the step times' interquartile half-range), in seconds.
double step_time_spread_s(const Measurement& m);

// Each rank's median GEMM time over the steps after the warm-up; 0 where not timed.
std::vector<double> median_gemm_s(const Measurement& m);

// The median over the steps after the warm-up of each action's duration: [rank][action].
std::vector<std::vector<double>> median_action_s(const Measurement& m);

// Keys: layout (the compact string), plan, backend, warmup_steps, median_step_time_s,
// median_tokens_per_s, steps [{step, loss, step_time_s, tokens_per_s}], ranks [{rank, peak_bytes,
// memory {parameters_bytes, ...}, gemm_flops_per_step, gemm_s [by step]}] (the gemm keys
// optional), actions [{step, rank, name, stream, start_s, end_s,
// micro_batch, chunk, bytes}] of every step and rank in program order.
nlohmann::json measurement_to_json(const Measurement& m);

// The inverse: the programs rebuilt from the plan, every action matched by name to its place in its
// rank's program. InputErrors name `file` and the field.
Measurement measurement_from_json(const nlohmann::json& j, const std::string& file);
Measurement read_measurement_file(const std::string& path);

}  // namespace shardplan
