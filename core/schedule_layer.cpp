// The units of a model chunk and the steps of their passes: where the tensor-, context- and
// expert-parallel collectives fall between the parts of a layer, and how large they are.

#include "core/schedule_detail.h"

namespace shardplan::schedule_detail {
namespace {

// Sizes and switches of the collectives inside one layer on this layout.
struct LayerComm {
  bool tp = false;        // tp > 1
  bool sp = false;        // sequence parallelism with tp > 1
  bool cp = false;        // cp > 1
  bool ep = false;        // ep > 1
  int64_t act_bytes = 0;  // hidden states of a micro-batch: b · s/cp · h
  // What the layers' linears gather per tensor: act_bytes, or b · s/cp · h bytes in FP8, which
  // TransformerEngine quantizes before it gathers (Training::fp8; TE's all-gather buffers are FP8
  // under an FP8 recipe, transformer_engine/pytorch/module/base.py initialize_ub fp8_buf).
  int64_t linear_gather_bytes = 0;
  int64_t kv_bytes = 0;   // K and V of the whole sequence: 2 · b · s · (kv_heads/tp) · head_dim
  int64_t a2a_bytes = 0;  // routed tokens: b · s/cp (/tp under SP) · top_k · h
  int64_t loss_bytes = 0;  // one fp32 value per token of the micro-batch: b · s/cp · 4
};

LayerComm layer_comm(const Model& m, const Training& t, const Layout& l) {
  const int64_t dt = dtype_bytes(t.dtype);
  LayerComm c;
  c.tp = l.tp > 1;
  c.sp = c.tp && l.sequence_parallel;
  c.cp = l.cp > 1;
  c.ep = m.is_moe() && l.ep > 1;
  const int64_t tokens = int64_t{l.micro_batch} * (t.seq_len / l.cp);
  // Korthikanti et al. 2022 §4.2.2: the tp all-reduce, reduce-scatter and all-gather of a
  // transformer layer each carry the full b·s·h activation.
  c.act_bytes = tokens * m.hidden * dt;
  c.linear_gather_bytes = t.fp8 == Fp8Recipe::none ? c.act_bytes : tokens * m.hidden;
  // TransformerEngine's all-gather context parallelism (Megatron-Core --cp-comm-type all_gather):
  // each rank gathers K and V of the whole sequence for its heads, and reduce-scatters dK, dV.
  c.kv_bytes = 2 * int64_t{l.micro_batch} * t.seq_len * (m.num_kv_heads / l.tp) * m.head_dim * dt;
  // Megatron-Core's all-to-all token dispatcher sends each of its tokens to top_k experts.
  c.a2a_bytes = (c.sp ? tokens / l.tp : tokens) * m.moe.top_k * m.hidden * dt;
  // Vocabulary-parallel cross-entropy reduces per-token statistics in fp32 whatever the dtype
  // (Megatron-core's VocabParallelCrossEntropy upcasts the logits).
  c.loss_bytes = tokens * dtype_bytes(Dtype::fp32);
  return c;
}

// Appends the steps of one pass, merging adjacent parts of a layer into one compute action.
struct PassSteps {
  std::vector<Action>& steps;
  Pass pass;
  const Unit& unit;
  const LayerComm& comm;

  void compute(Part part) {
    if (!steps.empty() && steps.back().kind == ActionKind::compute && steps.back().pass == pass) {
      steps.back().parts |= part_bit(part);
      return;
    }
    steps.push_back(step(ActionKind::compute, Stream::compute, part));
  }
  void collective(Stream s, Collective op, Group g, Part at, int64_t bytes) {
    Action a = step(ActionKind::collective, s, at);
    a.op = op;
    a.group = g;
    a.bytes = bytes;
    steps.push_back(a);
  }
  // Megatron-LM's conjugate operators (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2):
  // entering a tensor-parallel region gathers the sequence under SP; leaving it all-reduces the
  // partial sums, or reduce-scatters them under SP. `tensors` sequence-sharded [b·s/cp/tp, h]
  // tensors are gathered: going backward a layer gathers its saved input again with its output
  // gradient (see layer_backward).
  void tp_enter(Part at, int tensors = 1) { gather(at, tensors * comm.act_bytes); }
  // Entering a layer's linear layers: their inputs gathered as they compute (FP8 or not).
  void linear_enter(Part at, int tensors = 1) { gather(at, tensors * comm.linear_gather_bytes); }
  void gather(Part at, int64_t bytes) {
    if (comm.sp) collective(Stream::tp_comm, Collective::all_gather, Group::tp, at, bytes);
  }
  void tp_leave(Part at) {
    if (comm.tp)
      collective(Stream::tp_comm, comm.sp ? Collective::reduce_scatter : Collective::all_reduce,
                 Group::tp, at, comm.act_bytes);
  }
  void cp(Collective op) {
    if (comm.cp) collective(Stream::cp_comm, op, Group::cp, Part::attention_core, comm.kv_bytes);
  }
  // Megatron-core's VocabParallelCrossEntropy (tensor_parallel/cross_entropy.py): the row maxima
  // of the vocabulary-sharded logits all-reduced with max, then the predicted logits and the sums
  // of exponentials, concatenated, with sum (executor/lm_head.cpp head_forward).
  void cross_entropy() {
    if (!comm.tp) return;
    collective(Stream::tp_comm, Collective::all_reduce, Group::tp, Part::head, comm.loss_bytes);
    collective(Stream::tp_comm, Collective::all_reduce, Group::tp, Part::head, 2 * comm.loss_bytes);
  }
  void all_to_all() {
    if (comm.ep)
      collective(Stream::ep_comm, Collective::all_to_all, Group::ep, Part::experts, comm.a2a_bytes);
  }

 private:
  Action step(ActionKind kind, Stream s, Part part) const {
    return Action{.kind = kind,
                  .stream = s,
                  .pass = pass,
                  .parts = part_bit(part),
                  .layer_begin = unit.layer_begin,
                  .layer_end = unit.layer_end};
  }
};

// Forward of a layer: norm [AG] qkv [cp AG] core (AR|RS) norm [AG] mlp (AR|RS), the MLP of an MoE
// layer being router, all-to-all dispatch, experts, all-to-all combine.
void layer_forward(PassSteps& s, bool moe) {
  s.compute(Part::attention_norm);
  s.linear_enter(Part::attention_qkv);
  s.compute(Part::attention_qkv);
  s.cp(Collective::all_gather);
  s.compute(Part::attention_core);
  s.tp_leave(Part::attention_core);
  s.compute(Part::mlp_norm);
  if (moe) {
    s.tp_enter(Part::router);
    s.compute(Part::router);
    s.all_to_all();
    s.compute(Part::experts);
    s.all_to_all();
    s.tp_leave(Part::experts);
  } else {
    s.linear_enter(Part::mlp);
    s.compute(Part::mlp);
    s.tp_leave(Part::mlp);
  }
}

// Backward of a layer: the forward reversed, each collective replaced by its adjoint (an
// all-gather's is a reduce-scatter and back; the identity's is an all-reduce). Under context
// parallelism the backward gathers K and V again and reduce-scatters their gradients (TE).
// Under SP a column-parallel layer keeps only its sequence-sharded input and gathers it again
// for its weight gradient (Korthikanti et al. 2022 §4.2.2; Megatron-LM's
// LinearWithGradAccumulationAndAsyncCommunication.backward all-gathers the saved input): each
// all-gather going backward carries the output gradient and that input, packed into one
// collective as the executor runs it (executor/tp_collectives.h gather_token_pair), twice the
// forward's bytes.
void layer_backward(PassSteps& s, bool moe) {
  constexpr int kGradAndInput = 2;
  if (moe) {
    s.tp_enter(Part::experts, kGradAndInput);
    s.all_to_all();
    s.compute(Part::experts);
    s.all_to_all();
    s.compute(Part::router);
    s.tp_leave(Part::router);
  } else {
    s.linear_enter(Part::mlp, kGradAndInput);
    s.compute(Part::mlp);
    s.tp_leave(Part::mlp);
  }
  s.compute(Part::mlp_norm);
  s.linear_enter(Part::attention_core, kGradAndInput);
  s.cp(Collective::all_gather);
  s.compute(Part::attention_core);
  s.cp(Collective::reduce_scatter);
  s.compute(Part::attention_qkv);
  s.tp_leave(Part::attention_qkv);
  s.compute(Part::attention_norm);
}

Unit layer_unit(const Model& m, const Layout& l, const LayerComm& comm, int layer, bool moe,
                bool steps = true) {
  Unit u;
  u.layer_begin = layer;
  u.layer_end = layer + 1;
  u.parts = part_bit(Part::attention_norm) | part_bit(Part::attention_qkv) |
            part_bit(Part::attention_core) | part_bit(Part::mlp_norm) |
            (moe ? part_bit(Part::router) | part_bit(Part::experts) : part_bit(Part::mlp));
  u.params = layer_param_shard(m, l, moe);
  if (!steps) return u;
  // A layer's pass has at most 14 steps (an MoE layer's backward under SP, cp and ep).
  u.forward.reserve(16);
  u.backward.reserve(l.recompute == Recompute::full ? 32 : 16);
  PassSteps fwd{u.forward, Pass::forward, u, comm};
  layer_forward(fwd, moe);
  if (l.recompute == Recompute::full) {
    PassSteps re{u.backward, Pass::recompute, u, comm};
    layer_forward(re, moe);
  }
  PassSteps bwd{u.backward, Pass::backward, u, comm};
  layer_backward(bwd, moe);
  if (splits_backward(l.schedule)) {
    for (Action& a : u.backward)
      if (a.kind == ActionKind::compute && a.pass == Pass::backward) a.flags |= kInputGradOnly;
    // One action: the weight gradients of a layer are GEMMs over what its B kept, with no
    // collective between them.
    u.weight_grad.push_back(Action{.kind = ActionKind::compute,
                                   .stream = Stream::compute,
                                   .pass = Pass::weight_grad,
                                   .parts = u.parts,
                                   .layer_begin = u.layer_begin,
                                   .layer_end = u.layer_end});
  }
  return u;
}

// The two ends of the model. The vocab-parallel embedding (Megatron-LM) leaves the tensor-
// parallel region: each tp rank looks up its vocabulary shard and the partial embeddings are
// all-reduced (reduce-scattered under SP). The head enters it: the vocab-parallel LM head needs
// the whole sequence (gathered under SP), and its loss reduces the vocabulary-sharded logits'
// statistics (cross_entropy). Their backwards run the adjoints in reverse; the head's gathers its
// saved input again for the vocabulary weight's gradient (as a layer's, above: its output
// gradient is vocabulary-parallel and needs no gather).
void end_passes(Unit& u, Part part, const LayerComm& comm) {
  PassSteps fwd{u.forward, Pass::forward, u, comm};
  PassSteps bwd{u.backward, Pass::backward, u, comm};
  if (part == Part::embedding) {
    fwd.compute(part);
    fwd.tp_leave(part);
    bwd.tp_enter(part);
    bwd.compute(part);
  } else {  // the final norm outside the region, as a layer's
    fwd.compute(Part::head_norm);
    fwd.tp_enter(part);
    fwd.compute(part);
    fwd.cross_entropy();
    bwd.tp_enter(part);
    bwd.compute(part);
    bwd.tp_leave(part);
    bwd.compute(Part::head_norm);
  }
}

Unit embedding_unit(const Model& m, const Layout& l, const LayerComm& comm, bool steps = true) {
  Unit u;
  u.parts = part_bit(Part::embedding);
  u.params = first_stage_params(m, l);
  if (steps) end_passes(u, Part::embedding, comm);
  return u;
}

// Final norm, vocab-parallel LM head and loss.
Unit head_unit(const Model& m, const Layout& l, const LayerComm& comm, bool steps = true) {
  Unit u;
  u.layer_begin = u.layer_end = m.num_layers;
  u.parts = part_bit(Part::head_norm) | part_bit(Part::head);
  u.params = last_stage_params(m, l);
  if (m.tied_embeddings && last_stage_rank(l) == 0)
    u.borrowed_params = word_embedding_shard(m, l.tp);
  if (steps) end_passes(u, Part::head, comm);
  return u;
}

}  // namespace

Chunk build_chunk(const Model& m, const Training& t, const Layout& l, int chunk, int vs) {
  const LayerComm comm = layer_comm(m, t, l);
  const LayerRange layers = virtual_stage_layers(m, l, vs);
  Chunk c;
  c.chunk = chunk;
  c.virtual_stage = vs;
  if (vs == 0) c.units.push_back(embedding_unit(m, l, comm));
  for (int layer = layers.begin; layer < layers.end; ++layer)
    c.units.push_back(layer_unit(m, l, comm, layer, m.is_moe_layer(layer)));
  if (vs == l.pp * l.vpp - 1) c.units.push_back(head_unit(m, l, comm));
  return c;  // empty on a rank a framework's own split leaves without layers
}

UnitKinds unit_kinds(const Model& m, const Training& t, const Layout& l, bool steps) {
  const LayerComm comm = layer_comm(m, t, l);
  return {embedding_unit(m, l, comm, steps), layer_unit(m, l, comm, 0, false, steps),
          m.is_moe() ? layer_unit(m, l, comm, 0, true, steps) : Unit{},
          head_unit(m, l, comm, steps)};
}

int64_t p2p_bytes(const Model& m, const Training& t, const Layout& l) {
  // megatron/core/pipeline_parallel/schedules.py get_tensor_shapes: (s/cp [/tp under SP], b, h).
  const int64_t seq = t.seq_len / l.cp / (l.sequence_parallel && l.tp > 1 ? l.tp : 1);
  return seq * l.micro_batch * m.hidden * dtype_bytes(t.dtype);
}

}  // namespace shardplan::schedule_detail
