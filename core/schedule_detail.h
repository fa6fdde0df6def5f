// Internal to build_program: a model chunk cut into units (embedding, layers, head) with the steps
// of their passes, the data-parallel plan (gradient buckets, ZeRO gathers) and the helpers that
// append actions to a program. Not a contract: only core/schedule*.cpp include it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <vector>

#include "core/param_shard.h"
#include "core/schedule.h"

namespace shardplan::schedule_detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// What ZeRO-3 gathers and a gradient bucket counts: the embedding, one layer, or the head, with
// the steps (compute and collective actions, micro-batch and chunk unset) of each of its passes.
struct Unit {
  int layer_begin = 0, layer_end = 0;  // [l, l+1) for a layer, [0,0) embedding, [L,L) head
  PartSet parts = 0;
  ParamShard params;            // on this rank, after tensor and expert parallelism
  int64_t borrowed_params = 0;  // another unit's weights it uses: the tied word embedding in a
                                // head on the embedding's rank (ZeRO-3 gathers them for it too)
  std::vector<Action> forward;
  std::vector<Action> backward;  // under full recompute: the layer's forward (pass recompute) first
  // A layer's weight-gradient pass under a split backward (Pass::weight_grad): one compute action
  // over the layer's parts, with no collectives. Empty otherwise, and for the ends.
  std::vector<Action> weight_grad;
};

struct Chunk {
  int chunk = 0;
  int virtual_stage = 0;
  std::vector<Unit> units;  // in forward order
};

// The units of one virtual stage on a rank (schedule_layer.cpp).
Chunk build_chunk(const Model& m, const Training& t, const Layout& l, int chunk, int virtual_stage);

// One unit of each kind as build_chunk makes them (the layers' with layer index 0; moe empty for
// a dense model): what fold_program repeats instead of building every layer's. Without `steps`,
// their parameters and parts alone (what the data-parallel plan reads).
struct UnitKinds {
  Unit embedding, dense, moe, head;
};
UnitKinds unit_kinds(const Model& m, const Training& t, const Layout& l, bool steps);

// Bytes of one pipeline message (activation or its gradient) of a micro-batch: Megatron-LM's
// p2p tensor shape (s/cp, b, h), further split over tp under sequence parallelism.
int64_t p2p_bytes(const Model& m, const Training& t, const Layout& l);

// A gradient bucket: consecutive units [first_unit, last_unit] of a chunk whose gradients one
// grad_reduce carries; its reduction can start once the backward reaches first_unit.
struct Bucket {
  Group group = Group::dp;  // dp / dp_cp for dense weights, expert_dp for expert weights
  int first_unit = 0, last_unit = 0;
  int64_t params = 0;
};

// Everything the data-parallel side of the step needs while the passes are emitted
// (schedule_data_parallel.cpp).
struct DataParallel {
  int zero = 0;
  // The accumulated gradients' reduction overlaps the backward on the dp-comm stream; false: it
  // runs after the whole backward, on the compute stream (Training::overlap_grad_reduce).
  bool overlap = true;
  // ZeRO-1 reduced as ZeRO-0 is, by all-reduce, in one bucket after the whole backward
  // (core/schedule.h: zero1_reduced_whole).
  bool whole_all_reduce = false;
  // ZeRO-1/2's step-start gathers overlap the forward on the zero-comm stream; false: they run
  // on the compute stream before it (Training::overlap_param_gather).
  bool overlap_param_gather = true;
  Dtype dtype = Dtype::bf16, grad_dtype = Dtype::bf16;
  int dense_members = 1, expert_members = 1;  // ranks ZeRO shards the dense and expert weights over
  std::vector<std::vector<Bucket>> buckets;   // per chunk
  std::vector<std::vector<uint32_t>> bucket_gather;  // ZeRO-1/2: per chunk, per bucket
  std::vector<std::vector<bool>> unit_used;          // ZeRO-1/2: per chunk, per unit
  std::vector<int> backwards_done;                   // per chunk
  uint32_t use_end[2] = {kNone, kNone};              // ZeRO-3: last compute of the two last uses
  uint32_t last_reduction = kNone;
};

// Whether pipeline rank `pp_rank` sums the tied word embedding's gradients with the other end of
// the pipeline (first and last stage on two ranks: pp > 1 and not v_placement).
inline bool holds_embedding_pair(const Model& m, const Layout& l, int pp_rank) {
  const int last = last_stage_rank(l);
  return m.tied_embeddings && last != 0 && (pp_rank == 0 || pp_rank == last);
}

DataParallel plan_data_parallel(const Training& t, const Layout& l,
                                const std::vector<Chunk>& chunks);

// The data-parallel actions, as build_program emits them and fold_program counts them:
//   step_start_gather: ZeRO-1/2's gather of a bucket's updated parameters at the step's start;
//   unit_gather      : ZeRO-3's gather of a bucket (one unit) before its use in `pass`;
//   bucket_reduction : a bucket's gradient reduction after the backward that completes it.
Action step_start_gather(const DataParallel& dp, const Chunk& c, const Bucket& b);
Action unit_gather(const DataParallel& dp, const Chunk& c, const Bucket& b, int micro_batch,
                   Pass pass);
Action bucket_reduction(const DataParallel& dp, const Chunk& c, const Bucket& b, int micro_batch);

// Gradients accumulate over micro-batches and are reduced after the last one (DDP, ZeRO-1);
// ZeRO-2 and -3 keep only their shard, so they reduce-scatter after every backward
// (Rajbhandari et al. 2020 §5.2).
constexpr bool reduces_every_microbatch(int zero) {
  return zero >= 2;
}

// ZeRO-1/2: the all-gathers of the parameters the previous step updated, at the start of the step.
void emit_step_start_gathers(Program& p, DataParallel& dp, const std::vector<Chunk>& chunks);
// Gathers a unit's compute must wait for before the pass uses it (ZeRO-3 emits them here).
std::vector<uint32_t> before_unit(Program& p, DataParallel& dp, const Chunk& c, int unit,
                                  int micro_batch, Pass pass);
// After a unit's pass: ZeRO-3 bookkeeping, and gradient reductions of the buckets it completes.
void after_unit(Program& p, DataParallel& dp, const Chunk& c, int unit, int micro_batch, Pass pass,
                uint32_t last_compute, bool last_backward_of_chunk);
// A rank's parameters over its chunks' units: dense, expert, and replicated over tp.
struct StageParams {
  int64_t dense = 0, expert = 0, replicated = 0;
  void add(const Chunk& c, int64_t times);
};
// The step's end: the norm (SP) and tied-embedding (`embedding_pair`) gradient reductions, then
// the optimizer step, last.
std::vector<Action> step_end_actions(const DataParallel& dp, const Model& m, const Layout& l,
                                     const StageParams& params, bool embedding_pair);
void emit_step_end(Program& p, DataParallel& dp, const Model& m, const Layout& l,
                   const std::vector<Chunk>& chunks);

// Appends an action with its dependencies (kNone entries and duplicates dropped); returns its
// index.
uint32_t emit(Program& p, const Action& a, std::span<const uint32_t> deps);
inline uint32_t emit(Program& p, const Action& a, std::initializer_list<uint32_t> deps) {
  return emit(p, a, std::span<const uint32_t>(deps.begin(), deps.size()));
}

}  // namespace shardplan::schedule_detail
