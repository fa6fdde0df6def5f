// A calibration profile refitted from what the executor measured (`calibrate --from`), so that the
// next plan prices with what the last run took:
//   compute: each class of compute action (its parts and pass) is timed against the cost model's
//     price for it, and every GEMM shape and memory-bound kernel size priced inside the class gets
//     the rate that makes the class's total come out as measured (its priced time × the class's
//     measured/predicted ratio, summed over the classes it appears in), as a profile entry for
//     exactly that shape or size (a median rate: the profile's noise, kept, is priced on top as
//     before); where the run timed its GEMMs apart (measured.json's gemm_s),
//     GEMMs take their rank's measured/priced GEMM ratio instead and the class's kernels what is
//     left of its measured time;
//   collectives: each collective instance's own time — the shortest of its members' durations,
//     since every member ends together and the last to arrive waited least — at its size, merged
//     into the profile's sweep for that collective, level, group size and input (a parameter
//     gather's and a several-layer bucket's are cold: reads_cold_input), and alpha-beta refitted;
//     a ZeRO reduce-scatter's own memory traffic (grad_reduce_local_bytes) is taken off first;
//   the optimizer step: its rate over the parameters it updated.
// Pipeline sends and receives are left as they were: a receive's duration is mostly the wait for
// its sender.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/measurement.h"
#include "core/profile.h"

namespace shardplan {

// One class of compute action as refitted: the measured and predicted time per step, summed over
// every rank and run.
struct ComputeClassFit {
  std::string name;  // "forward attention_qkv+attention_core+mlp"
  int64_t actions = 0;
  double predicted_s = 0;
  double measured_s = 0;
};

struct RefitReport {
  std::vector<ComputeClassFit> compute;
  int64_t gemm_shapes = 0;       // entries written
  int64_t kernel_sizes = 0;      // entries written
  int64_t collective_sizes = 0;  // measured points merged
};

// `base` (null: the datasheet figures of each run's cluster) refined by `runs`; runs on one
// backend and compute dtype. InputError naming `files[i]` when a run disagrees with the others or
// with the base profile.
Profile refit_profile(const Profile* base, const std::vector<Measurement>& runs,
                      const std::vector<std::string>& files, RefitReport* report);

std::string format_refit_report(const RefitReport& r);

}  // namespace shardplan
