// The interpreter of one rank's step program (core/schedule.h): every action — compute over a
// layer's parts, the tp and cp collectives between them, pipeline sends and receives, gradient
// reductions, ZeRO gathers, the optimizer step — run for real on this rank's shard and timed, on
// the rank's runtime (rank_runtime.h): the CPU backend's or the CUDA backend's.
//
// The actions are issued in program order (a topological order of the program), each on its
// program stream after waiting for its dependencies on other streams. On the CPU one thread runs
// them as issued, so nothing overlaps (a CPU run gains little from it); on a GPU each stream is a
// CUDA stream and a dependency an event, so gradient reductions and ZeRO gathers overlap compute
// exactly where the program lets them. The one exception to program order is ZeRO-3's parameter
// gathers, issued as soon as their dependencies have been (FSDP's prefetch of the next unit:
// executor/state/zero3_units.h), so that memory holds what FSDP holds. Pipeline sends complete in
// the background, receives before the work that follows them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "core/training.h"
#include "executor/data.h"
#include "executor/layers/gemm_call.h"
#include "executor/layers/matmul.h"
#include "executor/runtime/cuda_rank.h"
#include "executor/state/adam.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

// A fault to inject, for the fault-handling tests: rank `rank` fails halfway through step `step`,
// by throwing, by SIGKILL, or by SIGSTOP (it hangs: the others' watchdog ends the job).
enum class FaultKind { throw_error, kill, stop };
struct InjectedFault {
  int64_t rank = -1;
  int64_t step = -1;
  FaultKind kind = FaultKind::throw_error;
};

class RankRuntime;
class InterpreterState;

struct InterpreterSettings {
  uint64_t seed = 1234;  // initial parameters and data
  AdamConfig adam;
  InjectedFault fault;
  Backend backend = Backend::cpu;  // which runtime the ranks run on (rank_runtime.h)
  CudaSettings cuda;               // Backend::cuda's
  // For tests: wraps the backend's runtime (to record its collectives); none in a run.
  std::function<std::unique_ptr<RankRuntime>(std::unique_ptr<RankRuntime>)> wrap_runtime;
  // For tests: the layers' outputs start as NaN (TensorAllocator::set_poison_for_overwrite).
  bool poison_for_overwrite = false;
  // For tests: every GEMM the rank's layers make is appended here (MatmulStats::calls).
  std::vector<GemmCall>* record_gemms = nullptr;
};

// The training state in the single-rank flat layout (param_layout of whole_model): what a
// checkpoint holds, so that a layout loads what any other saved. The parameters are fp32: the
// weights themselves, or under mixed precision their master copy (the bf16 weights are its
// rounding), so a checkpoint resumes in either precision.
struct FullState {
  std::vector<float> params, adam_m, adam_v;  // whole_model's layout: parameters, Adam's moments
  int64_t adam_step = 0;                      // Adam updates taken
};

// Whether the executor trains in `t`'s precision: fp32 weights, activations and gradients without a
// master copy, or bf16 ones with fp32 master weights (mixed precision, as Megatron-LM's --bf16).
bool runs_precision(const Training& t);

struct StepMeasurement {
  double loss = 0;                    // mean token loss of the global batch (every rank)
  double step_time_s = 0;             // slowest rank, barrier to barrier (every rank)
  std::vector<ActionTiming> timings;  // this rank's actions, seconds from the step's start
  MatmulStats gemms;  // this rank's GEMMs in the step: FLOPs and wall seconds (core/measurement.h)
};

class RankInterpreter {
 public:
  // Collective over MPI_COMM_WORLD, whose size must be l.world(). Throws InputError for layouts
  // the executor does not run (ep > 1, and the models param_layout rejects) and for precisions it
  // does not run (runs_precision). Weights, activations and gradients are fp32, or under mixed
  // precision (t.dtype bf16) bf16 with fp32 master weights, fp32 Adam moments and an fp32 loss.
  RankInterpreter(const Model& m, const Training& t, const Layout& l, const TextTokens& text,
                  const InterpreterSettings& settings);
  ~RankInterpreter();
  RankInterpreter(const RankInterpreter&) = delete;
  RankInterpreter& operator=(const RankInterpreter&) = delete;

  // Step `step` of training; collective.
  StepMeasurement run_step(int64_t step);

  const Program& program() const;
  const TensorAllocator& allocator() const;

  // Every parameter of the model (fp32: under mixed precision the master weights) in the
  // single-rank flat layout (param_layout of whole_model), on rank 0 (empty elsewhere). Collective.
  std::vector<float> gather_full_parameters();

  // Parameters and Adam state in the single-rank flat layout, on rank 0 (empty vectors elsewhere).
  // Collective.
  FullState gather_full_state();

  // Every rank takes its part of `state` (read on rank 0 only; the others may pass an empty one):
  // its tp/pp tensors, then under ZeRO its shard (over dp, or dp·cp) — the inverse of
  // gather_full_state. Collective.
  void load_full_state(const FullState& state);

 private:
  std::unique_ptr<InterpreterState> s_;
};

}  // namespace shardplan
