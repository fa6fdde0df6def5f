// The interpreter's per-rank state (interpreter.h's RankInterpreter holds it as an
// InterpreterState), shared by its three source files: interpreter.cpp (the step's actions in
// program order, the layers' passes, action timings), interpreter_pipeline.cpp (micro-batches and
// their tokens, pipeline messages, the hand-off between two stages on one rank) and
// interpreter_data_parallel.cpp (gradient reductions, ZeRO gathers and shards, the optimizer step,
// the full state in and out).
// Not a contract: only those include it. RankState<T> is written once for the storage type T of
// weights, activations and gradients: float, or bf16 under mixed precision, where Adam keeps the
// fp32 master weights (adam.h) and the loss is computed in fp32 (lm_head.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "executor/interpreter.h"
#include "executor/layers/block.h"
#include "executor/layers/lm_head.h"
#include "executor/runtime/rank_runtime.h"
#include "executor/state/zero3_units.h"

namespace shardplan {

// One micro-batch's chunk between its forward and its backward.
template <class T>
struct MicroBatch {
  Buffer<int32_t> inputs, targets;
  Buffer<T> x;     // the stream between units going forward
  Buffer<T> grad;  // its gradient going backward
  std::map<int, BlockSaved<T>> layers;
  HeadSaved<T> head;
};

// A unit's pass as one call into the layer code: actions [first, last), their tp and cp calls.
struct UnitPassRun {
  size_t first = 0, last = 0;
  Stamp start, end;
  std::vector<TimedCall> calls;
};

// What RankInterpreter asks of its state, whatever the storage type.
class InterpreterState {
 public:
  virtual ~InterpreterState() = default;
  virtual StepMeasurement run_step(int64_t step) = 0;
  virtual const Program& rank_program() const = 0;
  virtual const TensorAllocator& allocator() const = 0;
  virtual std::vector<float> whole_params() = 0;
  virtual FullState gather_full_state() = 0;
  virtual void load_full_state(const FullState& state) = 0;
};

template <class T>
struct RankState final : InterpreterState {
  const Model& m;
  Training t;
  Layout l;
  const TextTokens& text;
  InterpreterSettings settings;
  Program program;
  std::unique_ptr<RankRuntime> rt;  // before every Buffer: its allocator outlives them
  TensorAllocator& alloc;
  Kernels<T>& dev;
  StepStreams& streams;
  GroupComm &tp, &cp;
  RankShard shard;
  ParamLayout layout;
  LayerDims dims;
  MatmulStats matmul;
  LayerContext<T> ctx{alloc, tp.layers<T>(), &matmul, &cp.layers<T>(), &dev};
  Group zero_group;           // the dense weights' replicas, which ZeRO shards over: dp, or dp·cp
  ZeroShards shards;          // ZeRO's shards of the flat buffer over zero_group, per unit
  Buffer<T> params;           // the full flat buffer; none under ZeRO-3
  Buffer<T> grads;            // the full flat buffer (ZeRO-2: the bucket); none under ZeRO-3
  Buffer<T> param_shard;      // ZeRO-3: this rank's padded shard
  Buffer<T> grad_shard;       // ZeRO-2 and 3: this rank's padded shard
  Zero3Units<T> zero3;        // ZeRO-3: gathered units and their gradients
  // Moments, and under mixed precision the master weights, over what this rank owns: the flat
  // buffer, or under ZeRO its padded shard.
  AdamState adam;
  std::map<std::pair<int, int>, MicroBatch<T>> live;  // by (micro-batch, chunk)
  // Under a split backward, the weight gradients each layer's B left for its W, by (micro-batch,
  // chunk, layer).
  std::map<std::tuple<int, int, int>, DeferredWeightGrads<T>> weight_grads;
  int64_t step = 0;
  double loss_sum = 0;
  // This step's stamps: every action's start and end (a unit pass's actions share its end), the
  // unit passes with their tp and cp calls, and the gradient ranges reduced so far.
  std::vector<Stamp> starts, ends;
  std::vector<UnitPassRun> passes;
  std::vector<std::pair<ElementRange, Stamp>> reductions;

  RankState(const Model& model, const Training& training, const Layout& lay, const TextTokens& tx,
            const InterpreterSettings& st);

  // InterpreterState
  StepMeasurement run_step(int64_t step) override;
  const Program& rank_program() const override { return program; }
  const TensorAllocator& allocator() const override { return alloc; }
  std::vector<float> whole_params() override;
  FullState gather_full_state() override;
  void load_full_state(const FullState& state) override;

  // `host` into the device buffer at `into`, converted to U where the types differ (fp32 values
  // into bf16 weights).
  template <class U, class V>
  void to_device(U* into, const std::vector<V>& host) {
    if constexpr (std::is_same_v<U, V>)
      dev.copy_from_host(into, host.data(), static_cast<int64_t>(host.size() * sizeof(U)));
    else
      to_device(into, std::vector<U>(host.begin(), host.end()));
  }

  // This rank's padded shard of a flat host buffer in the layout's order: its piece of every
  // unit, zeros past each.
  std::vector<float> owned_part(const std::vector<float>& flat) const;

  // The parameters' fp32 values as the weights hold them (the flat buffer, or under ZeRO-3 the
  // padded shard) into the weights (rounded to T) and, under mixed precision, the master weights.
  void set_owned_parameters(const std::vector<float>& values);

  // The gradients a unit's backward pass adds to (the head's include a tied word embedding).
  std::vector<ElementRange> written_by(const Action& a) const;

  // Where action `a` runs: a unit pass on the compute stream (its tp and cp collectives go to
  // their streams and back inside it), every other action on its program stream.
  static Stream run_stream(const Action& a) {
    return a.kind == ActionKind::compute || a.kind == ActionKind::collective ? Stream::compute
                                                                             : a.stream;
  }

  // Selects the stream of actions [first, last) and makes it wait for their dependencies on other
  // streams (and, going backward, for reductions still reading the gradients it adds to); then
  // stamps their start.
  void begin_actions(size_t first, size_t last);
  void end_actions(size_t first, size_t last);

  // The state of the action's micro-batch chunk: made with its tokens when first met, with what a
  // stage on this rank handed it (take_handed_off).
  MicroBatch<T>& micro_batch(const Action& a);

  // The micro-batch's sequences, the same on every cp rank of a dp rank; under context parallelism
  // this rank's tokens of them.
  void sample_tokens(int micro_batch, MicroBatch<T>& mb);

  // The send or recv at program index i.
  void p2p(size_t i);
  // A pass whose previous stage (the next, going backward) ran on this rank, v_placement's turn at
  // rank pp − 1, starts from what that stage left, as it would from a recv: its input goes forward,
  // its input's gradient backward (which ends that stage's micro-batch). micro_batch calls it, so
  // that a chunk's first unit and, for a chunk without layers, its send find it there.
  void take_handed_off(const Action& a, MicroBatch<T>& mb);

  // One unit's pass of a micro-batch: actions [first, last) of the program. Its weights are the
  // full flat buffer, or under ZeRO-3 the unit's gathered parameters (freed when the pass ends);
  // a backward adds to the full gradients, or under ZeRO-3 to the unit's own until its
  // grad_reduce.
  void unit_pass(size_t first, size_t last);
  // The layers' calls of that pass on weights `w`, gradients `g` (none going forward); a layer's
  // backward keeps its weight gradients for its weight_grad action when `input_grad_only` (B).
  void run_unit(const Action& a, const FlatView<const T>& w, const FlatView<T>& g,
                bool input_grad_only);

  // Action i, outside the units' passes, on its stream.
  void run_action(size_t i);
  // ZeRO-3: before the unit pass at `next`, the gathers ready to be issued ahead (FSDP's
  // prefetch).
  void prefetch(size_t next);

  // The pass's collective actions timed by the layers' tp and cp calls, one for one (unit_pass
  // checked them: program_calls.h); a compute action runs from the collective before it to the one
  // after it.
  void attribute(const UnitPassRun& run, std::vector<ActionTiming>& timings) const;

  // Every action's start and end in seconds from the step's start (after the step's streams ended).
  std::vector<ActionTiming> timings() const;

  // Where this rank keeps its reduced gradients of unit u under ZeRO: its piece of the flat
  // buffer (ZeRO-1), or of its gradient shard (ZeRO-2 and 3).
  T* owned_grads(size_t u);

  // The tensor at `range` with this rank's reduced gradients of it in place and zeros elsewhere:
  // under ZeRO the pieces it owns.
  Buffer<T> pieces_in_zeros(ElementRange range);
  // Puts `full`'s values of the pieces this rank owns back where it keeps them.
  void take_pieces(const Buffer<T>& full, ElementRange range);
  // Gradient sums over `comm` of the tensor at `range` where this rank keeps its reduced
  // gradients: the whole buffer, or under ZeRO its pieces, which every member of `comm` owns alike
  // (tp peers share their dp coordinate).
  void all_reduce_tensor_grads(GroupComm& comm, ElementRange range);
  // The tied word embedding's gradient (its range in this rank's buffer), summed over the first and
  // last stage. Under ZeRO the two ends own different pieces of it, so the program first sums each
  // end's pieces over zero_group into the whole tensor, kept here until the pair's sum.
  ElementRange word_embedding_range() const;
  std::optional<Buffer<T>> assembled_word_embedding;

  void grad_reduce(const Action& a);

  // The param_gather at program index `index`.
  void param_gather(const Action& a, uint32_t index);

  // Adam on what this rank owns: everything, its padded shard (ZeRO-3), or its pieces of the
  // flat buffer (ZeRO-1/2), whose moments lie in a padded shard.
  void optimizer_step();

  // This rank's whole flat buffer (layout.total), on the host, from fp32 values it owns (`owned`):
  // the flat buffer with ZeRO off, else its padded shard (every member's gathered, unit by unit).
  std::vector<float> rank_flat(const float* owned);

  // What this rank owns (`owned`: as rank_flat takes it) in the whole model's flat layout, on
  // rank 0.
  std::vector<float> whole(const float* owned);

  // This rank's pieces of `flat` (on the device) into the padded shard buffer `into` (zeros past
  // each piece's end).
  void own_shard(const float* flat, Buffer<float>& into);

  void inject_fault(size_t action);
  bool fault_injected = false;  // settings.fault's, once
};

}  // namespace shardplan
