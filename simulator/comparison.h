// Predicted against measured: a plan simulated rank by rank (plan_simulation.h) set beside what the
// executor measured running the same programs (core/measurement.h), action kind by action kind
// and rank by rank, with the memory items of every rank. What `compare` prints and `demo`
// tabulates, and the relative errors the calibration is judged by.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/measurement.h"
#include "simulator/plan_simulation.h"
#include "simulator/priced_ops.h"

namespace shardplan {

// (predicted − measured) / measured; 0 when both are 0.
double relative_error(double predicted, double measured);

// The KindTime of a rank's step outside its actions (the step time less its actions' times, posted
// sends aside): waiting no action holds, and work the timeline attributes to no action (the
// executor's layer code between a pass's last collective and its return).
inline constexpr const char* kOutsideActions = "(outside actions)";

// One kind of action (action_kind_name) on one rank, over one step: the time the rank spent in
// its actions, a group action's or recv's from the rank's arrival (the call's entry) to its end. Of
// that, the wait is the time before the other ranks it needs had reached theirs (the group's last
// member, the recv's sender: core/action_matching.h): their lateness, where the rest is the
// transfer the cost model prices.
struct KindTime {
  int64_t rank = 0;
  std::string name;
  int64_t actions = 0;
  double predicted_s = 0;       // summed over the simulated step
  double measured_s = 0;        // each action's median over the measured steps, summed
  double predicted_wait_s = 0;  // of predicted_s
  double measured_wait_s = 0;   // of measured_s: each action's median wait, summed
};

// The Gap of a rank's waits for other ranks, beside its action kinds' gaps (which leave them out).
inline constexpr const char* kPartnerWait = "(waiting for other ranks)";

struct RankMemoryComparison {
  int64_t rank = 0;
  MeasuredMemory predicted;  // the simulated rank's items (SimulatedMemory) in the same shape
  MeasuredMemory measured;
};

// Where the step's time went differently: one action kind, its measured − predicted time per step
// less its waits, on the rank that measured the longest busy time outside waits (the one the step
// waits for); that rank's waits for other ranks are one more Gap (kPartnerWait).
struct Gap {
  std::string name;
  double gap_s = 0;
};

// A rank's GEMMs in its compute actions over one step: what the cost model priced and what the
// run timed around its GEMM calls (the rank's median over the steps after the warm-up). The FLOPs
// agree when the executor runs the GEMMs the cost model prices; the times then tell the GEMM rate
// apart from the rest.
struct RankGemms {
  int64_t rank = 0;
  double predicted_flops = 0, measured_flops = 0;
  double predicted_s = 0, measured_s = 0;
};

struct Comparison {
  std::string layout;  // the compact string
  double predicted_step_time_s = 0;
  double measured_step_time_s = 0;           // median after the warm-up
  int64_t predicted_peak_bytes = 0;          // worst rank
  int64_t measured_peak_bytes = 0;           // worst rank
  int64_t measured_steps = 0;                // after the warm-up
  std::vector<KindTime> kinds;               // by rank, then in order of first appearance
  std::vector<RankMemoryComparison> memory;  // by rank
  std::vector<RankGemms> gemms;              // by rank; empty: the run timed no GEMMs
  int64_t gap_rank = 0;                      // the rank the gaps are on
  std::vector<Gap> gaps;                     // largest |gap_s| first

  double step_time_error() const {
    return relative_error(predicted_step_time_s, measured_step_time_s);
  }
  // The GEMMs' predicted time against their measured time, summed over the ranks, at the measured
  // FLOPs; NaN without measured GEMMs.
  double gemm_time_error() const;
  // The ranks' measured waits in collectives less their predicted waits, per step, averaged over
  // the ranks: time lost to ranks running at different speeds that the prediction did not foresee.
  // Recvs' waits are left out: a pipeline's are its bubble, which grows with every stage's
  // compute alike.
  double excess_wait_s = 0;
  // The measured median step less the sum of its parts' medians (each action's, posted sends
  // aside, and the time outside them), averaged over the ranks: the noise inside the steps. A
  // step's time sums its parts' and its median follows their means, which sit above their medians
  // where noise slows a few calls a lot (a core taken away, a neighbour's burst); the cost model,
  // pricing medians, carries only the profile's share of it (Profile::noise).
  double step_noise_s = 0;
  double peak_error() const {
    return relative_error(static_cast<double>(predicted_peak_bytes),
                          static_cast<double>(measured_peak_bytes));
  }
};

// 1 for the smallest value, 2 for the next, ...; equal values share the smaller rank.
std::vector<int> ranks_by(const std::vector<double>& values);

// Whether predictions order runs as measurements do, counted over the pairs the measurements can
// tell apart: those whose measured times differ by more than their two spreads together.
struct OrderAgreement {
  int distinguishable_pairs = 0;
  int agreeing_pairs = 0;
  std::vector<std::pair<size_t, size_t>> disagreeing;  // (i, j): measured i faster, predicted not
};
OrderAgreement order_agreement(const std::vector<double>& predicted,
                               const std::vector<double>& measured,
                               const std::vector<double>& spread);

// `predicted` must simulate every rank (no symmetry) of the plan `measured` ran, so that programs
// and actions correspond one to one; `gemms`, by rank, the cost model's GEMMs of those programs
// (simulator/priced_ops.h; empty: no GEMM comparison).
Comparison compare_run(const PlanSimulation& predicted, const Measurement& measured,
                       const std::vector<ProgramGemms>& gemms = {});

}  // namespace shardplan
