// One training step as a program per rank: the compute, pipeline sends and receives, collectives
// and optimizer step each rank performs, in order, on named streams, with the dependencies between
// streams. The simulator prices these programs and the executor runs them: one schedule, two
// interpreters, so predicted and measured line up action by action.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/enum_names.h"
#include "core/layout.h"
#include "core/model.h"
#include "core/placement.h"
#include "core/training.h"

namespace shardplan {

// Streams of one rank. Actions on one stream run one after another in program order; actions on
// different streams overlap unless a dependency orders them. ZeRO parameter gathers have their own
// stream, as FSDP's all-gather stream, so they never queue behind gradient reductions.
enum class Stream : uint8_t { compute, tp_comm, cp_comm, ep_comm, dp_comm, zero_comm, pp_comm };
inline constexpr int kNumStreams = 7;
inline constexpr EnumNames<Stream, kNumStreams> kStreamNames{{{Stream::compute, "compute"},
                                                              {Stream::tp_comm, "tp-comm"},
                                                              {Stream::cp_comm, "cp-comm"},
                                                              {Stream::ep_comm, "ep-comm"},
                                                              {Stream::dp_comm, "dp-comm"},
                                                              {Stream::zero_comm, "zero-comm"},
                                                              {Stream::pp_comm, "pp-comm"}}};

enum class ActionKind : uint8_t {
  compute,         // a pass over `parts` of one layer (or the embedding, or the head)
  send,            // pipeline send to `peer`: activation (pass forward) or its gradient (backward)
  recv,            // the matching receive from `peer`
  collective,      // tp / cp / ep collective inside a layer's pass
  grad_reduce,     // gradient reduction: dp bucket, SP norm grads over tp, tied embedding over pp
  param_gather,    // ZeRO all-gather of parameters before their use
  optimizer_step,  // the update of the `params` this rank owns
};
inline constexpr EnumNames<ActionKind, 7> kActionKindNames{
    {{ActionKind::compute, "compute"},
     {ActionKind::send, "send"},
     {ActionKind::recv, "recv"},
     {ActionKind::collective, "collective"},
     {ActionKind::grad_reduce, "grad_reduce"},
     {ActionKind::param_gather, "param_gather"},
     {ActionKind::optimizer_step, "optimizer_step"}}};

// Which pass of a micro-batch an action belongs to. Full recomputation re-runs a layer's forward
// (its collectives included) as its own actions just before that layer's backward; selective
// recomputation (Korthikanti et al. 2022 §5) re-runs only the attention core inside the backward
// action and so has no actions of its own (the pricer adds its FLOPs to the backward). Under a
// schedule that splits the backward (splits_backward), a layer's backward computes its input
// gradient only (its compute flagged kInputGradOnly: the zero-bubble papers' B) and a later
// weight_grad action (W) its weight gradients, dW += dYᵀ·X of each linear layer; the ends (the
// embedding, whose gradient is a scatter-add, and the head, whose W would keep the logits'
// gradient for every micro-batch waiting on it) keep their whole backward.
enum class Pass : uint8_t { none, forward, backward, recompute, weight_grad };
inline constexpr EnumNames<Pass, 5> kPassNames{{{Pass::none, "none"},
                                                {Pass::forward, "forward"},
                                                {Pass::backward, "backward"},
                                                {Pass::recompute, "recompute"},
                                                {Pass::weight_grad, "weight_grad"}}};

// The pieces of computation between which collectives fall. A dense layer is attention_norm (input
// norm), attention_qkv (q/k/v projections), attention_core (attention, output projection),
// mlp_norm (pre-MLP norm) and mlp; an MoE layer has router (gate) and experts instead of mlp. The
// head is head_norm (final norm) and head. A norm is a part of its own because it runs outside the
// tensor-parallel region that follows it: under SP before the all-gather of its output, and going
// backward after the all-reduce (reduce-scatter) of its output's gradient. A compute action runs a
// set of parts of one layer: in ascending order going forward, descending going backward.
//
// A layer's passes, with [..] present only when that parallelism is on (tp > 1, SP, cp > 1,
// ep > 1); AG all_gather, RS reduce_scatter, AR all_reduce, A2A all_to_all:
//   forward : norm [tp AG] qkv [cp AG K,V] core [tp AR|RS] norm [tp AG] mlp [tp AR|RS]
//             MoE: ... norm [tp AG] router [ep A2A dispatch] experts [ep A2A combine] [tp AR|RS]
//   backward: [tp AG] mlp [tp AR|RS] norm [tp AG] [cp AG K,V] core [cp RS dK,dV] qkv [tp AR|RS]
//             norm
//             MoE: [tp AG] [ep A2A] experts [ep A2A] router [tp AR|RS] norm ...
// An all-gather precedes the part named in its action (it gathers that part's input: the
// sequence under SP, K and V under cp; a layer's backward all-gather carries its output gradient
// and its saved input together, twice the forward's bytes); an all-reduce or reduce-scatter
// follows it (partial sums of its output going forward, of its input gradient going backward).
// The embedding is "embedding [tp AR|RS]" forward, "[tp AG] embedding" backward; the head
// "head_norm [tp AG] head [tp AR max, AR sum]" forward (the vocabulary-parallel cross-entropy's
// two fp32 all-reduces, is_loss_reduction), "[tp AG input] head [tp AR|RS] head_norm" backward.
enum class Part : uint8_t {
  embedding,
  attention_norm,
  attention_qkv,
  attention_core,
  mlp_norm,
  mlp,
  router,
  experts,
  head_norm,
  head
};
inline constexpr EnumNames<Part, 10> kPartNames{{{Part::embedding, "embedding"},
                                                 {Part::attention_norm, "attention_norm"},
                                                 {Part::attention_qkv, "attention_qkv"},
                                                 {Part::attention_core, "attention_core"},
                                                 {Part::mlp_norm, "mlp_norm"},
                                                 {Part::mlp, "mlp"},
                                                 {Part::router, "router"},
                                                 {Part::experts, "experts"},
                                                 {Part::head_norm, "head_norm"},
                                                 {Part::head, "head"}}};
using PartSet = uint16_t;
constexpr PartSet part_bit(Part p) {
  return static_cast<PartSet>(1u << static_cast<unsigned>(p));
}
constexpr bool has_part(PartSet s, Part p) {
  return (s & part_bit(p)) != 0;
}
// "attention_qkv+attention_core".
std::string parts_name(PartSet s);

// Action flags: the micro-batch chunk's activations are allocated when this action starts (its
// first forward compute) or freed when it ends (its last backward compute, or under a split
// backward its last weight_grad compute); a backward compute that leaves the weight gradients to
// a weight_grad action (Pass above); under a split backward, the chunk's last backward compute,
// from whose end the chunk holds only what its W reads.
inline constexpr uint8_t kAllocatesActivations = 1;
inline constexpr uint8_t kFreesActivations = 2;
inline constexpr uint8_t kInputGradOnly = 4;
inline constexpr uint8_t kKeepsWeightGradInputs = 8;

// One action of a rank's program. Fields that do not apply to a kind keep their defaults.
//   compute       : pass, micro_batch, chunk, layer_begin (layer_end = layer_begin + 1; the
//                   embedding is layer range [0, 0), the head [L, L)), parts
//   send / recv   : pass, micro_batch, chunk (this rank's), peer, tag, bytes
//   collective    : pass, micro_batch, chunk, layer range, parts (the part it follows or precedes
//                   in its pass), op, group, bytes
//   grad_reduce   : op, group, chunk, layer range, parts (embedding/head bits say whether they are
//                   in the bucket), params, bytes, micro_batch (the backward it follows). A ZeRO
//                   reduce_scatter also moves its output piece where the optimizer reads it:
//                   ZeRO-1 copies it into the gradient buffer, ZeRO-2 and -3 add it into the
//                   gradient shard (FSDP's sharded gradient accumulation), and ZeRO-2 then zeroes
//                   the bucket for the next micro-batch's backward (grad_reduce_local_bytes).
//                   group dp / dp_cp / expert_dp: a data-parallel bucket (expert_dp: the expert
//                   weights of the MoE layers in range, dp / dp_cp: every other weight);
//                   group tp: the replicated norm weights' gradients under sequence parallelism;
//                   group pp: the tied word embedding between the first and last stage; under
//                   ZeRO-1/2 the dp all-reduce that first sums its pieces has no parts (it
//                   covers no bucket), where a ZeRO-1 reduced whole (zero1_reduced_whole) has no
//                   such step.
//   param_gather  : op all_gather, group, chunk, layer range, parts, params, bytes; micro_batch
//                   and pass of the use it precedes (ZeRO-3), or -1 / none (ZeRO-1/2 at step
//                   start). A ZeRO-3 head gather with the embedding bit also gathers the tied word
//                   embedding the head uses (tied embeddings, pp = 1).
//   optimizer_step: params (this rank's share after ZeRO)
// `bytes` is nccl-tests' size: one rank's full buffer (reduce-scatter input, all-gather output).
struct Action {
  ActionKind kind = ActionKind::compute;
  Stream stream = Stream::compute;
  Pass pass = Pass::none;
  Collective op = Collective::send_recv;
  Group group = Group::pp;
  PartSet parts = 0;
  uint8_t flags = 0;
  int32_t micro_batch = -1;
  int32_t chunk = -1;  // model chunk on this rank; its virtual stage is virtual_stage's
  int32_t layer_begin = 0;
  int32_t layer_end = 0;
  uint32_t deps_begin = 0;  // explicit dependencies: Program::deps[deps_begin, +deps_count)
  uint32_t deps_count = 0;
  int64_t peer = -1;  // send / recv
  int64_t tag = -1;   // send / recv: message id, equal on both sides
  int64_t bytes = 0;
  int64_t params = 0;
};

// The vocabulary-parallel cross-entropy's all-reduces (of per-token fp32 statistics, not of
// partial sums): the only all-reduces of the head's forward, which enters the tensor-parallel
// region and never leaves it.
constexpr bool is_loss_reduction(const Action& a) {
  return a.kind == ActionKind::collective && a.op == Collective::all_reduce &&
         a.pass == Pass::forward && has_part(a.parts, Part::head);
}

// Collectives, gradient reductions and parameter gathers: the actions a group runs together.
constexpr bool is_group_action(const Action& a) {
  return a.kind == ActionKind::collective || a.kind == ActionKind::grad_reduce ||
         a.kind == ActionKind::param_gather;
}

// Whether most of the action's input was last written long before it, so that no cache holds it:
// a parameter gather's shards were written by the previous step's optimizer step (ZeRO-1/2 gather
// them at step start, ZeRO-3 before each use), and a gradient bucket spanning several layers was
// written over their whole backward, all but its last layer's before the one just computed; a
// one-layer bucket (ZeRO-3's units), collectives and sends move what the compute has just written.
// Profiles time both (CollectiveFit::cold_input): on this project's 2-core CPU machine a 3.16 MB
// all_gather over 2 ranks took 816-979 us on cold input against 715-1013 us on input written just
// before, 13% more in the median of four alternating runs (Open MPI 4.1, output buffers cold in
// both; measured 2026-11-23).
constexpr bool reads_cold_input(const Action& a) {
  return a.kind == ActionKind::param_gather ||
         (a.kind == ActionKind::grad_reduce && a.layer_end - a.layer_begin > 1);
}

// A rank's program for one training step. Actions are in program order, which is a topological
// order: every dependency names an earlier action. Actions on one stream are ordered by program
// order; an action also waits for its explicit dependencies; a recv waits for its matching send
// (same tag, the sender as peer); a collective starts when every member of its group has reached
// it (members issue their collectives on a group in the same order).
struct Program {
  int64_t rank = 0;
  RankCoord coord;
  std::vector<Action> actions;
  std::vector<uint32_t> deps;
  std::array<std::vector<int64_t>, 7> groups;  // group_ranks by Group
  std::vector<int64_t> embedding_group;        // first and last stage (tied embeddings, pp > 1)

  std::span<const uint32_t> deps_of(const Action& a) const {
    return {deps.data() + a.deps_begin, a.deps_count};
  }
  // Ranks taking part in a collective, grad_reduce or param_gather.
  const std::vector<int64_t>& members(const Action& a) const;
};

// When one action of a program ran (simulated or measured), in seconds from the start of the step.
struct ActionTiming {
  double start_s = 0;
  double end_s = 0;
};

// One step of a pipeline rank's order: the forward, backward or (under a split backward) weight
// gradient pass of a micro-batch on a model chunk.
struct PipelineStep {
  Pass pass = Pass::forward;
  int micro_batch = 0;
  int chunk = 0;
  bool forward() const { return pass == Pass::forward; }
  bool operator==(const PipelineStep&) const = default;
};

// The order of forward and backward passes on pipeline rank `pp_rank`:
//   gpipe       : every forward, then every backward (Huang et al. 2019)
//   1f1b        : warm-up of pp − pp_rank − 1 forwards, steady state of one forward and one
//                 backward, cool-down of the remaining backwards (Narayanan et al. 2021 §2.2.1)
//   interleaved : 1F1B over vpp model chunks per rank with Megatron-LM's warm-up and chunk order
//                 (Narayanan et al. 2021 §2.2.2; megatron/core/pipeline_parallel/schedules.py).
//   zb-h1       : 1F1B's warm-up, then pp_rank pairs of a forward and a backward (B) whose weight
//                 gradients (W) wait, a steady state of F, B, W, a cool-down of B, W, and the
//                 pp_rank W left (Qi et al. 2024 §3.1, handcrafted ZB-H1 as sail-sg's
//                 zero-bubble-pipeline-parallelism runs it under DeepSpeed). Every stage holds at
//                 most pp micro-batches, 1F1B's first stage's peak; with equal F, B and W times
//                 the bubble is (pp − 1)(F + B − W), a third of 1F1B's (pp − 1)(F + B + W).
//   zb-h2       : 2(pp − pp_rank) − 1 warm-up forwards, 2·pp_rank pairs of a B and a forward
//                 whose W wait, a steady state of B, W, F, a cool-down of B, W, and the W left
//                 (Qi et al. 2024 §3.1 and Figure 3's ZB-H2). Every stage holds at most
//                 2·pp − 1 micro-batches; with equal F, B and W the bubble is the fill alone,
//                 (pp − 1)·F.
//   zb-v        : the two chunks of a rank placed in a V (v_placement), F, B and W ordered as
//                 sail-sg's zbv.py builds them: all ranks stepped together with equal passes, each
//                 taking what is ready in the order B, chunk 1's F, chunk 0's F, W, and starting a
//                 micro-batch only while its chunks in flight, with a place kept for chunk 1 of
//                 each one started, stay within 2pp (1F1B's first stage's pp micro-batches; Qi et
//                 al. 2024 §4). With equal F, B and W of a chunk the bubble is, in chunk passes,
//                 ZB-H1's 2(pp − 1) at pp = 2, the fill alone (pp − 1) at pp = 4, 11 against
//                 ZB-H1's 14 at pp = 8.
// Throws InputError for interleaved when num_microbatches is not a multiple of pp.
std::vector<PipelineStep> pipeline_order(const Layout& l, int pp_rank);

// zb-v's orders of every pipeline rank for pp ranks and m micro-batches, and every pass as
// (rank, position in its order) in the order the steps placed them, in which each pass comes
// after every pass it waits for. Built once for all ranks (the planner and the memory model ask
// for each rank's of the same few (pp, m) over and over) and kept per thread, the last few: valid
// until the thread's next call.
struct ZeroBubbleVOrders {
  std::vector<std::vector<PipelineStep>> ranks;
  std::vector<std::pair<int, int>> placed;
};
const ZeroBubbleVOrders& zero_bubble_v_orders(int pp, int m);

// The phases of a zero-bubble order (zb-h1, zb-h2) on pipeline rank `pp_rank`, before clamping to
// the micro-batches there are: `warmup` forwards, `pairs` pairs of passes whose W wait, then the
// `steady` three while forwards remain (pipeline_order runs them).
struct ZeroBubblePhases {
  int warmup = 0, pairs = 0;
  std::array<Pass, 2> pair{};
  std::array<Pass, 3> steady{};
};
ZeroBubblePhases zero_bubble_phases(const Layout& l, int pp_rank);

// The forwards a zero-bubble rank runs before its first W, with enough micro-batches: the most it
// holds (pp under ZB-H1 on every rank, 2pp − 1 under ZB-H2).
int forwards_before_first_weight_grad(const ZeroBubblePhases& z);

// Virtual stage of a model chunk (Megatron's interleaved assignment, chunk·pp + pp_rank, or the V
// of v_placement) and its layer range, as the layout splits the layers (core/stage_split.h;
// L/(pp·vpp) each when even); stage_slot is virtual_stage's inverse: the pipeline rank and chunk
// holding a virtual stage.
int virtual_stage(const Layout& l, int pp_rank, int chunk);
struct StageSlot {
  int pp_rank = 0, chunk = 0;
  bool operator==(const StageSlot&) const = default;
};
StageSlot stage_slot(const Layout& l, int vs);
// The pipeline rank holding the last virtual stage (the head and the loss): pp − 1, or 0 under
// v_placement.
int last_stage_rank(const Layout& l);
struct LayerRange {
  int begin = 0, end = 0;
};
LayerRange virtual_stage_layers(const Model& m, const Layout& l, int virtual_stage);

// The gradient bucket size in parameters: the framework's (Training::grad_bucket_elements), or
// Megatron-LM's max(4·10⁷, 10⁶·dp·cp), over the data-parallel group with the context-parallel
// ranks (megatron/core/distributed/distributed_data_parallel.py: DistributedDataParallelConfig.
// bucket_size's default).
int64_t grad_bucket_params(const Training& t, const Layout& l);
// Whether the layout's ZeRO-1 reduces the gradients with one all-reduce of the whole buffer after
// the backward (Training::zero1_whole_all_reduce: nanotron, whose ZeRO-1 drops its DDP wrapper
// only when it accumulates the gradients in fp32), every rank keeping all of them.
bool zero1_reduced_whole(const Training& t, const Layout& l);
// The parameters that close a bucket (core/zero_units.h's gradient_buckets): ZeRO-3 makes each
// unit with parameters its own bucket, a ZeRO-1 reduced whole one bucket of each chunk's dense
// and expert weights, otherwise grad_bucket_params.
int64_t bucket_threshold(const Training& t, const Layout& l);

// Bytes a ZeRO reduce_scatter's local work streams through memory on each of its `members` ranks
// (what the grad_reduce entry above names), counted as STREAM counts them, every element read or
// written once: ZeRO-1 copies the output piece (2 · piece), ZeRO-2 and -3 add it into the shard
// (3 · piece), and ZeRO-2 zeroes the bucket (+ its bytes), as
// executor/interpreter_data_parallel.cpp and zero_collectives.cpp run them. 0 for every other
// action.
int64_t grad_reduce_local_bytes(const Action& a, int zero, int members);
// The same for a ZeRO-`zero` reduce_scatter of `bytes` over `params` gradient elements (0 when
// zero = 0 or params = 0).
int64_t zero_reduce_scatter_local_bytes(int64_t bytes, int64_t params, int zero, int members);

// The full program of `rank` for one training step. The layout must be valid for the model.
Program build_program(const Model& m, const Training& t, const Layout& l, int64_t rank);

// Programs for a whole step. With symmetry, one program per pipeline stage (tp, cp, ep and dp
// coordinates 0) stands for all ranks of that stage: its tensor-, context-, expert- and
// data-parallel peers run the same program on equal shards, so their timelines are identical.
struct StepPrograms {
  std::vector<Program> programs;
  int64_t world = 0;
  int64_t ranks_per_program = 1;  // world / programs.size()
  bool symmetric() const { return ranks_per_program > 1; }
};
StepPrograms build_step(const Model& m, const Training& t, const Layout& l, bool exploit_symmetry);

// "forward mb3 c1", "send activation mb3 c1", "tp all_reduce mb3 c1", "dp reduce_scatter c1",
// "optimizer step": the same names in simulated and measured traces.
std::string action_name(const Action& a);

// action_name without micro-batch and chunk: what kind of action it is ("backward",
// "backward input" (a split backward's B), "weight_grad" (its W), "tp all_reduce",
// "tp all_reduce loss", "recv activation", "grad_reduce dp reduce_scatter").
std::string action_kind_name(const Action& a);

}  // namespace shardplan
