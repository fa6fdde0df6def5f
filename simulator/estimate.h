// The cost model's prediction for one (model, cluster, training, layout): memory of every pipeline
// stage's ranks, compute and communication of the slowest stage, and the step's totals (step time,
// tokens/s, TFLOP/s per device, MFU, HFU, time and cost to train). It prices the program the event
// simulator walks and the executor runs, folded by repetition (core/schedule_fold.h), each distinct
// action by the simulator's own rule (simulator/action_cost.h); what the dependencies hide is
// read in closed form: each window's communication under its compute, and the pipeline's fill and
// drain (simulator/pipeline_model.h). Pure and allocation-light: the planner calls it for every
// candidate layout.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/placement.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/collective_cost.h"
#include "simulator/comm_volume.h"
#include "simulator/compute_model.h"
#include "simulator/execution_options.h"
#include "simulator/memory_model.h"
#include "simulator/model_flops.h"

namespace shardplan {

// One distinct communication action of the slowest stage's program (a send, collective, gradient
// reduction or parameter gather; core/schedule_fold.h), priced on the level its members span.
struct CollectiveEstimate {
  Action action;  // one of those it stands for
  CommFrequency frequency = CommFrequency::per_microbatch;
  CommWindow window = CommWindow::none;
  GroupSpan span;
  std::string level_name;      // of span.level ("nvlink", "infiniband")
  CollectiveCost cost;         // one call
  double local_s = 0;          // one call's own memory traffic after it (a ZeRO reduce-scatter's)
  int64_t calls_per_step = 0;  // per-micro-batch calls × micro-batches, or the per-step calls
  double volume_bytes = 0;     // sent by one rank per step (comm_volume.h)
  double total_s = 0;          // per step
  double exposed_s = 0;        // per step, not hidden under computation

  // The action's kind as traces name it: "tp all_reduce", "grad_reduce dp reduce_scatter".
  std::string name() const { return action_kind_name(action); }
};

// Where the step's time goes on the critical path; the parts add up to the step time.
struct StepTime {
  double compute_s = 0;          // forward and backward of every micro-batch on the slowest stage
  double recompute_s = 0;        // the re-forward of recomputation
  double microbatch_comm_s = 0;  // exposed tp, cp, ep, pp and ZeRO-3 communication
  double bubble_s = 0;           // pipeline fill and drain
  double step_comm_s = 0;  // exposed data-parallel reductions and gathers, embedding all-reduce
  // Compute slowed by the communication it hides: NCCL's SMs taken from it (interference.h).
  double interference_s = 0;
  double optimizer_s = 0;
};

struct Estimate {
  int64_t world = 0;
  int64_t tokens_per_step = 0;
  double peak_flops_per_device = 0;  // dense peak for the training dtype, or FP8's
  Fp8Recipe fp8 = Fp8Recipe::none;   // the training's (Training::fp8): MFU is of the FP8 peak
  ExecutionOptions options;

  double step_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_device = 0;   // model FLOPs / step time / world, in 10^12 FLOP/s
  double mfu = 0;                 // model FLOPs (Narayanan et al. 2021 eq. 3, no recompute) / peak
  double best_published_mfu = 0;  // on this device (Device::best_published_mfu); 0: unknown
  // Above the best published MFU on this device: the prediction is optimistic.
  bool mfu_above_published() const { return best_published_mfu > 0 && mfu > best_published_mfu; }
  double hfu = 0;              // hardware FLOPs (with recompute) / peak
  double bubble_fraction = 0;  // of the pipeline time (pipeline_model.h)
  double exposed_comm_s = 0;   // sum of the collectives' exposed time
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double train_time_s = 0;  // for Training::tokens_to_train (0 when not asked)
  double train_cost = 0;    // for Training::price_per_device_hour (0 when not asked)
  StepTime time;

  // Memory: one entry per pipeline stage; the worst is the largest peak.
  std::vector<RankMemory> stages;
  int worst_stage = 0;
  int64_t worst_rank = 0;  // tp = cp = dp = 0 rank of the worst stage
  bool fits = true;
  std::optional<MemoryOverflow> overflow;  // of the worst stage, when it does not fit
  const RankMemory& memory() const { return stages[static_cast<size_t>(worst_stage)]; }

  // Compute and communication of the slowest stage.
  int slowest_stage = 0;
  std::vector<double> stage_microbatch_s;  // per stage: one micro-batch, compute + exposed comm
  MicrobatchCompute compute;               // one micro-batch on the slowest stage
  double optimizer_bytes = 0;              // moved by the optimizer step on the slowest stage
  std::vector<CollectiveEstimate> collectives;
};

// What estimate() carries from one layout to the next: each stage's priced passes (core/
// schedule_fold.h's fold_passes) and step_time_lower_bound's bound, which layouts differing only
// in their ZeRO stage share (ZeRO-2/3 apart where the gradients' accumulation adds a shard). The
// planner enumerates the ZeRO stages of a layout one after another (planner/enumerate.h), and keeps
// one cache per thread. A cache serves one model, cluster, training and options.
class EstimateCache {
 public:
  EstimateCache();
  ~EstimateCache();
  EstimateCache(const EstimateCache&) = delete;
  EstimateCache& operator=(const EstimateCache&) = delete;
  struct State;  // stage_timing.cpp
  State& state() { return *state_; }
  // Every stage's layers and model state, for worst_stage_memory too.
  StageStateCache& stage_states();
  // Whether estimate() replays every stage's allocations for its allocator's reserve
  // (allocator_replay.h, about a millisecond a layout). The planner's inner loop turns it off:
  // the tensors' peak, a lower bound of the reserve, prunes soundly, and the layouts it keeps are
  // estimated again in full.
  bool replay_allocator = true;

 private:
  std::unique_ptr<State> state_;
};

// Assumes a layout that validate_layout accepted for this model, cluster and training. Throws
// InputError when the device has no peak for the training dtype.
Estimate estimate(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x = {}, EstimateCache* cache = nullptr);

// A lower bound on estimate(m, c, t, l, x).step_time_s, the same for every ZeRO stage of `l`: the
// step of the micro-batches' passes alone (fold_passes), without the data-parallel half
// (fold_data_parallel: gradient reductions, parameter gathers, the optimizer step). That half adds
// no compute, and each window's exposed time, the pipeline's time and the step's critical path
// only grow with the communication added to them, so the whole program's step is never shorter.
// The planner skips a layout whose bound cannot beat what it keeps. With `enough`, the stages are
// priced first to last only until enough(bound) holds, those not priced yet counting as taking no
// time: a lower bound still, since the step only grows with each stage's time; and first the
// bound of `l` without recomputation, which is no larger: recomputation only adds the re-forward's
// compute and, under full recomputation, the collectives it runs again, and the passes leave every
// collective of theirs exposed (no ZeRO window to hide under). Its passes stay in `cache` for
// estimate(). Throws as estimate() does.
double step_time_lower_bound(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                             const ExecutionOptions& x = {}, EstimateCache* cache = nullptr,
                             const std::function<bool(double)>& enough = nullptr);

}  // namespace shardplan
