// Per-rank figures of one timed step — busy, idle, exposed communication, bubble, stream use and
// peak activation memory — from any timeline of a program, simulated or measured.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/schedule.h"
#include "simulator/trace.h"

namespace shardplan {

// Activations alive on a rank after a change: a micro-batch chunk's forward began keeping its
// activations, or its backward freed them.
struct ActivationPoint {
  double time_s = 0;
  int chunks = 0;  // micro-batch chunks alive
  int64_t bytes = 0;
};

struct RankStats {
  int64_t rank = 0;
  double busy_s = 0;          // compute stream busy
  double idle_s = 0;          // step time − busy
  double exposed_comm_s = 0;  // compute stream idle while this rank communicates
  double bubble_s = 0;        // idle and not communicating: waiting on other ranks
  std::array<double, kNumStreams> stream_busy_s{};  // time each stream has an action running
  int peak_activation_chunks = 0;  // most micro-batch chunk activations alive at once
  int64_t peak_activation_bytes = 0;
  // The first moment the bytes peak, and the forward whose activations brought them there.
  double peak_activation_s = 0;
  int peak_micro_batch = -1;
  int peak_chunk = -1;
  std::vector<ActivationPoint> activations;  // every change, in time order
};

// A micro-batch chunk's activations are alive from the start of its action flagged
// kAllocatesActivations to the end of the one flagged kFreesActivations; `activation_bytes(chunk)`
// gives their size, `weight_grad_bytes(chunk)` what is left of them from the end of an action
// flagged kKeepsWeightGradInputs (a split backward's B).
RankStats rank_stats(const Program& p, const std::vector<ActionTiming>& timings, double step_time_s,
                     const std::function<int64_t(int chunk)>& activation_bytes,
                     const std::function<int64_t(int chunk)>& weight_grad_bytes);

}  // namespace shardplan
