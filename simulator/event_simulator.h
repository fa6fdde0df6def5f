// Discrete-event simulation of one training step: every rank's program runs on its streams, with
// real dependencies (a recv waits for its send, a collective starts when its last member arrives,
// the optimizer waits for its gradients), so bubbles, stalls and overlap emerge from the
// schedule. Action durations come from an ActionPricer.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "simulator/execution_options.h"
#include "simulator/step_stats.h"
#include "simulator/trace.h"

namespace shardplan {

// Prices actions for the simulator. The analytical cost model implements it; UniformPricer
// (uniform_pricer.h) is the one for tests.
struct ActionPricer {
  virtual ~ActionPricer() = default;
  // Seconds `a` of program `p` runs once it starts. A send's is the transfer time (its recv ends
  // when the data has arrived and is not asked); a collective's must be the same on every member.
  virtual double duration_s(const Program& p, const Action& a) const = 0;
  // The share of its rank's compute rate that `a` takes while compute runs beside it
  // (interference.h); 0 by default.
  virtual double interference_share(const Program& /*p*/, const Action& /*a*/) const { return 0; }
  // Bytes one micro-batch's activations of `chunk` hold on p's rank from its forward to its
  // backward.
  virtual int64_t activation_bytes(const Program& p, int chunk) const = 0;
  // Those of them a split backward keeps from the chunk's B to its W; all of them by default.
  virtual int64_t weight_grad_bytes(const Program& p, int chunk) const {
    return activation_bytes(p, chunk);
  }
};

// One action on the critical path; `on_path_s` is the time it adds to the path (its duration, or
// for a recv the wait past its send's end, usually 0).
struct CriticalAction {
  size_t program = 0;
  uint32_t action = 0;
  double on_path_s = 0;
};

// A stream that could not finish: what its next action waits for.
struct StreamWait {
  int64_t rank = 0;
  Stream stream = Stream::compute;
  uint32_t action = 0;
  std::string waiting_for;  // "recv activation mb3 c0 on rank 1 (not done)", ...
};

struct SimResult {
  double step_time_s = 0;
  int64_t world = 0;
  int64_t ranks_per_program = 1;  // > 1: symmetry used, each program stands for this many ranks
  std::string symmetry;           // what the symmetry assumed, "" without
  int64_t events = 0;             // actions simulated
  std::vector<RankStats> ranks;   // per program
  std::vector<std::vector<ActionTiming>> timings;  // per program, per action
  // Per program, per action: the time from its rank's arrival to its start, which its timing
  // leaves out: a group action's until the group's last member arrived, a recv's until its send
  // started (partner_wait_s in core/action_matching.h: the same, measured); 0 for the others.
  std::vector<std::vector<double>> wait_s;
  std::vector<CriticalAction> critical_path;          // earliest first
  std::array<double, kNumStreams> critical_path_s{};  // path time by stream
  std::vector<StreamWait> deadlock;                   // empty unless some stream could not finish
  std::vector<std::string> errors;  // members of a collective disagreeing on op or size
  // Per program: the compute time added by the communication it overlapped (interference.h).
  std::vector<double> interference_s;

  bool ok() const { return deadlock.empty() && errors.empty(); }
};

// With StreamExecution::program_order each rank runs its actions one at a time in program order,
// whatever their streams (shardplan's CPU executor): a collective or a recv holds the rank until it
// ends, a pipeline send is posted and the rank goes on at once (MPI_Isend), its transfer still
// timing the matching recv.
//
// Compute slowed by the communication beside it (ActionPricer::interference_share) is priced in a
// second run: each compute action is lengthened by the share × its overlap, in the first run, with
// every communication action of its rank; the second run's overlaps are not priced again.
SimResult simulate(const StepPrograms& step, const ActionPricer& pricer,
                   StreamExecution streams = StreamExecution::concurrent);

}  // namespace shardplan
