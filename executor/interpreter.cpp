#include "executor/interpreter.h"

#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <csignal>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "executor/action_ranges.h"
#include "executor/block.h"
#include "executor/context_parallel.h"
#include "executor/embedding.h"
#include "executor/lm_head.h"
#include "executor/mpi_comm.h"
#include "executor/param_init.h"
#include "executor/whole_layout.h"
#include "executor/zero3_units.h"

namespace shardplan {

namespace {

enum class UnitKind { embedding, layer, head };

UnitKind unit_of(const Action& a) {
  if (has_part(a.parts, Part::embedding)) return UnitKind::embedding;
  if (has_part(a.parts, Part::head)) return UnitKind::head;
  return UnitKind::layer;
}

// Consecutive compute and collective actions of one unit's pass (recompute belongs to backward):
// the interpreter runs them as one call into the layer code.
bool same_unit_pass(const Action& a, const Action& b) {
  const auto in_pass = [](const Action& x) {
    return x.kind == ActionKind::compute || x.kind == ActionKind::collective;
  };
  return in_pass(a) && in_pass(b) && a.micro_batch == b.micro_batch && a.chunk == b.chunk &&
         a.layer_begin == b.layer_begin && a.layer_end == b.layer_end && unit_of(a) == unit_of(b) &&
         (a.pass == Pass::forward) == (b.pass == Pass::forward);
}

ElementRange rows_of(const ParamTensor& t) {
  return {t.row_begin, t.row_begin + t.local_rows};
}

RankShard rank_shard(const Model& m, const Layout& l, const RankCoord& c) {
  RankShard s;
  s.tp = l.tp;
  s.tp_rank = c.tp;
  for (int chunk = 0; chunk < l.vpp; ++chunk) {
    const LayerRange r = virtual_stage_layers(m, l, virtual_stage(l, c.pp, chunk));
    for (int layer = r.begin; layer < r.end; ++layer) s.layers.push_back(layer);
  }
  s.embedding = c.pp == 0;
  s.head = c.pp == l.pp - 1;
  return s;
}

const Program& checked(const Program& p, const Layout& l) {
  if (l.ep > 1)
    throw InputError("layout", "layout.ep", "the executor does not run expert parallelism",
                     "use ep=1");
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != l.world())
    throw InputError(
        "layout", "layout",
        "needs " + std::to_string(l.world()) + " ranks, mpirun started " + std::to_string(world),
        "run it under mpirun -np " + std::to_string(l.world()));
  return p;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

}  // namespace

// One micro-batch's chunk between its forward and its backward.
struct MicroBatch {
  Buffer<int32_t> inputs, targets;
  Buffer<float> x;     // the stream between units going forward
  Buffer<float> grad;  // its gradient going backward
  std::map<int, BlockSaved<float>> layers;
  HeadSaved<float> head;
};

struct RankInterpreter::State {
  const Model& m;
  Training t;
  Layout l;
  const TextTokens& text;
  InterpreterSettings settings;
  Program program;
  MpiGroups groups;
  MpiTpComm tp, cp;
  TensorAllocator alloc;
  RankShard shard;
  ParamLayout layout;
  LayerDims dims;
  MatmulStats matmul;
  LayerContext<float> ctx{alloc, tp, &matmul, &cp};
  Group zero_group;           // the dense weights' replicas, which ZeRO shards over: dp, or dp·cp
  FlatShards shards;          // ZeRO's shards of the flat buffer over zero_group
  Buffer<float> params;       // the full flat buffer; none under ZeRO-3
  Buffer<float> grads;        // the full flat buffer (ZeRO-2: the bucket); none under ZeRO-3
  Buffer<float> param_shard;  // ZeRO-3: this rank's padded shard
  Buffer<float> grad_shard;   // ZeRO-2 and 3: this rank's padded shard
  Zero3Units zero3;           // ZeRO-3: gathered units and their gradients
  AdamState adam;
  std::map<std::pair<int, int>, MicroBatch> live;  // by (micro-batch, chunk)
  std::vector<std::pair<MPI_Request, Buffer<float>>> sends;
  std::vector<TimedCall> calls;
  std::vector<char> ran;  // this step's actions that have run (ZeRO-3 gathers run ahead)
  int64_t step = 0;
  double step_start = 0;
  double loss_sum = 0;

  State(const Model& model, const Training& training, const Layout& lay, const TextTokens& tx,
        const InterpreterSettings& st)
      : m(model),
        t(training),
        l(lay),
        text(tx),
        settings(st),
        program(checked(build_program(model, training, lay, world_rank()), lay)),
        groups(program),
        tp(groups.get(Group::tp), Group::tp),
        cp(groups.get(Group::cp), Group::cp),
        alloc("rank " + std::to_string(program.rank)),
        shard(rank_shard(model, lay, program.coord)),
        layout(param_layout(model, shard)),
        dims(layer_dims(model, shard, lay.micro_batch, training.seq_len,
                        lay.sequence_parallel && lay.tp > 1, lay.cp, program.coord.cp)),
        zero_group(dense_dp_group(lay)),
        shards{layout.total, group_size(lay, zero_group),
               rank_in_group(lay, program.rank, zero_group)},
        zero3(alloc, shards, groups.get(zero_group)) {
    if (l.zero >= 3) {  // each rank initialises its own shard (zeros past its end)
      param_shard =
          alloc.allocate<float>(MemoryCategory::parameters, shards.padded(), "parameter shard");
      init_parameters(m, layout, settings.seed, shards.mine(),
                      param_shard.span().first(static_cast<size_t>(shards.mine().count())));
    } else {
      params = alloc.allocate<float>(MemoryCategory::parameters, layout.total, "parameters");
      init_parameters(m, layout, settings.seed, params.span());
    }
    if (l.zero < 2)
      grads = alloc.allocate<float>(MemoryCategory::gradients, layout.total, "gradients");
    else if (l.zero == 2)
      grads = alloc.allocate<float>(MemoryCategory::buffers, layout.total, "gradient accumulation");
    if (l.zero >= 2)
      grad_shard =
          alloc.allocate<float>(MemoryCategory::gradients, shards.padded(), "gradient shard");
    adam = adam_state(alloc, l.zero >= 1 ? shards.padded() : layout.total);
  }

  MicroBatch& micro_batch(const Action& a) {
    auto [it, fresh] = live.try_emplace({a.micro_batch, a.chunk});
    MicroBatch& mb = it->second;
    if (fresh) {
      mb.inputs = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "input tokens");
      mb.targets = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "target tokens");
      sample_tokens(a.micro_batch, mb);
    }
    return mb;
  }

  // The micro-batch's sequences, the same on every cp rank of a dp rank; under context parallelism
  // this rank's tokens of them.
  void sample_tokens(int micro_batch, MicroBatch& mb) {
    const int64_t first =
        first_sequence(program.coord.dp, micro_batch, l.micro_batch, l.num_microbatches);
    if (l.cp == 1)
      return sample_micro_batch(text, settings.seed, step, first, l.micro_batch, t.seq_len,
                                mb.inputs.span(), mb.targets.span());
    const int64_t whole = l.micro_batch * t.seq_len;
    Buffer<int32_t> inputs = alloc.allocate<int32_t>(MemoryCategory::buffers, whole, "sequences"),
                    targets = alloc.allocate<int32_t>(MemoryCategory::buffers, whole, "targets");
    sample_micro_batch(text, settings.seed, step, first, l.micro_batch, t.seq_len, inputs.span(),
                       targets.span());
    take_local_tokens(dims, inputs.data(), mb.inputs.data());
    take_local_tokens(dims, targets.data(), mb.targets.data());
  }

  void reap_sends(bool wait) {
    std::erase_if(sends, [&](auto& s) {
      int done = 0;
      if (wait)
        MPI_Wait(&s.first, MPI_STATUS_IGNORE), done = 1;
      else
        MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
      return done != 0;
    });
  }

  void p2p(const Action& a) {
    const bool forward = a.pass == Pass::forward;
    const int64_t n = dims.local_tokens() * dims.hidden;
    const int peer = static_cast<int>(a.peer), tag = static_cast<int>(a.tag % 32768);
    MicroBatch& mb = micro_batch(a);
    if (a.kind == ActionKind::recv) {
      Buffer<float>& into = forward ? mb.x : mb.grad;
      into = alloc.allocate<float>(forward ? MemoryCategory::activations : MemoryCategory::buffers,
                                   n, forward ? "received activation" : "received gradient");
      MPI_Recv(into.data(), static_cast<int>(n), MPI_FLOAT, peer, tag, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    } else {
      Buffer<float> out = std::move(forward ? mb.x : mb.grad);
      assert(out.size() == n);
      MPI_Request r = MPI_REQUEST_NULL;
      MPI_Isend(out.data(), static_cast<int>(n), MPI_FLOAT, peer, tag, MPI_COMM_WORLD, &r);
      sends.emplace_back(r, std::move(out));
      if (!forward) live.erase({a.micro_batch, a.chunk});
    }
    reap_sends(false);
  }

  // One unit's pass of a micro-batch: actions [first, last) of the program. Its weights are the
  // full flat buffer, or under ZeRO-3 the unit's gathered parameters (freed when the pass ends);
  // a backward accumulates into the full gradients, or under ZeRO-3 into the unit's own until its
  // grad_reduce.
  void unit_pass(size_t first, size_t last, std::vector<ActionTiming>& timings) {
    const Action& a = program.actions[first];
    const bool forward = a.pass == Pass::forward;
    const std::optional<uint32_t> gather =
        l.zero >= 3 ? unit_gather(program, first, last) : std::nullopt;
    assert(gather || l.zero < 3 || shards.members == 1);
    float* const flat_w = l.zero >= 3 ? param_shard.data() : params.data();
    // Into the shard where no grad_reduce moves gradients there: a one-member zero group has none.
    const bool into_shard = l.zero >= 3 || (l.zero == 2 && shards.members == 1);
    float* const flat_g = into_shard ? grad_shard.data() : grads.data();
    const FlatView<const float> w =
        gather ? zero3.params(*gather) : FlatView<const float>::whole(flat_w, layout);
    const FlatView<float> g =
        forward  ? FlatView<float>{}
        : gather ? zero3.start_gradients(*gather, last_compute(program, first, last))
                 : FlatView<float>::whole(flat_g, layout);
    calls.clear();
    tp.calls = cp.calls = &calls;
    const double t0 = MPI_Wtime();
    run_unit(a, w, g);
    const double t1 = MPI_Wtime();
    tp.calls = cp.calls = nullptr;
    if (gather) zero3.reshard(*gather);
    attribute(first, last, t0, t1, timings);
  }

  void run_unit(const Action& a, const FlatView<const float>& w, const FlatView<float>& g) {
    MicroBatch& mb = micro_batch(a);
    const bool forward = a.pass == Pass::forward;
    switch (unit_of(a)) {
      case UnitKind::embedding: {
        const ParamTensor &wte = layout.get("wte"), &wpe = layout.get("wpe");
        if (forward) {
          mb.x = embedding_forward(dims, mb.inputs.data(), w.at(wte), rows_of(wte), w.at(wpe), ctx);
        } else {
          embedding_backward(dims, mb.inputs.data(), mb.grad.data(), rows_of(wte), g.at(wte),
                             g.at(wpe), ctx);
          live.erase({a.micro_batch, a.chunk});
        }
        break;
      }
      case UnitKind::layer: {
        const int layer = a.layer_begin;
        const auto wt = block_tensors(layout, layer, w);
        if (forward)
          mb.x = block_forward(dims, wt, std::move(mb.x), l.recompute, mb.layers[layer], ctx);
        else
          mb.grad = block_backward(dims, wt, block_tensors(layout, layer, g),
                                   std::move(mb.layers.at(layer)), mb.grad.data(), ctx);
        break;
      }
      case UnitKind::head: {
        if (forward) {
          loss_sum += head_forward(dims, head_tensors(layout, w), head_vocab(layout),
                                   std::move(mb.x), mb.targets.data(), mb.head, ctx);
        } else {
          const auto tokens = static_cast<float>(t.global_batch * t.seq_len);
          mb.grad = head_backward(dims, head_tensors(layout, w), head_tensors(layout, g),
                                  head_vocab(layout), mb.targets.data(), std::move(mb.head),
                                  1.0f / tokens, ctx);
        }
        break;
      }
    }
  }

  // The layers' tp and cp calls matched in order to the pass's collective actions (the vocabulary-
  // parallel cross-entropy's small all-reduces are inside the head's compute action, as the
  // schedule says); a compute action runs from the collective before it to the one after it.
  void attribute(size_t first, size_t last, double t0, double t1,
                 std::vector<ActionTiming>& timings) {
    size_t next = 0;
    for (size_t i = first; i < last; ++i) {
      const Action& a = program.actions[i];
      if (a.kind != ActionKind::collective) continue;
      while (next < calls.size() && (calls[next].op != a.op || calls[next].group != a.group))
        ++next;
      const double at = i > first ? timings[i - 1].end_s + step_start : t0;
      timings[i] = next < calls.size() ? ActionTiming{calls[next].start_s - step_start,
                                                      calls[next].end_s - step_start}
                                       : ActionTiming{at - step_start, at - step_start};
      if (next < calls.size()) ++next;
    }
    double cursor = t0 - step_start;
    for (size_t i = first; i < last; ++i) {
      if (program.actions[i].kind == ActionKind::collective) {
        cursor = timings[i].end_s;
        continue;
      }
      size_t j = i + 1;
      while (j < last && program.actions[j].kind != ActionKind::collective) ++j;
      timings[i] = {cursor, j < last ? timings[j].start_s : t1 - step_start};
    }
  }

  // Gradient sums over `comm` of the tensors in `range` (replicated norms over tp, the tied
  // embedding over the first and last stage) where this rank keeps its reduced gradients: the
  // whole buffer, or under ZeRO its shard (gathered over zero_group for the sum, then put back:
  // the two stages' shards cover different tensors).
  void all_reduce_tensor_grads(MPI_Comm comm, ElementRange range) {
    if (l.zero == 0)
      return all_reduce_sum(comm, {grads.data() + range.begin, static_cast<size_t>(range.count())});
    const ElementRange mine = shards.mine();
    const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                  end = std::clamp(range.end, mine.begin, mine.end);
    float* owned = l.zero >= 2 ? grad_shard.data() + (begin - mine.begin) : grads.data() + begin;
    Buffer<float> full =
        alloc.allocate<float>(MemoryCategory::buffers, range.count(), "gradient gather");
    all_gather_range(groups.get(zero_group), shards, range, owned, full.data());
    all_reduce_sum(comm, full.span());
    std::copy(full.data() + (begin - range.begin), full.data() + (end - range.begin), owned);
  }

  void grad_reduce(const Action& a) {
    if (a.group == Group::tp) {
      for (const ParamTensor& x : layout.tensors)
        if (x.split == TensorSplit::replicated)
          all_reduce_tensor_grads(groups.get(Group::tp), {x.offset, x.offset + x.count()});
      return;
    }
    if (a.group == Group::pp) {
      const ParamTensor& x = layout.get(shard.embedding ? "wte" : "lm_head");
      return all_reduce_tensor_grads(groups.embedding(), {x.offset, x.offset + x.count()});
    }
    // ZeRO-3: the unit's own gradients, from the backward this reduction follows (its one
    // dependency), which the head's include the tied word embedding it borrowed under pp = 1.
    if (l.zero >= 3) return zero3.reduce_scatter(program.deps_of(a).front(), grad_shard.data());
    const MPI_Comm comm = groups.get(a.group);
    const ElementRange mine = shards.mine();
    for (const ElementRange r : action_ranges(layout, a)) {
      float* full = grads.data() + r.begin;
      if (a.op == Collective::all_reduce) {
        all_reduce_sum(comm, {full, static_cast<size_t>(r.count())});
      } else if (l.zero == 1) {  // the reduced part back into the buffer the optimizer steps
        const int64_t begin = std::clamp(r.begin, mine.begin, mine.end),
                      end = std::clamp(r.end, mine.begin, mine.end);
        Buffer<float> part =
            alloc.allocate<float>(MemoryCategory::buffers, end - begin, "reduce-scatter output");
        reduce_scatter_range(comm, shards, r, full, part.data());
        std::copy(part.data(), part.data() + part.size(), grads.data() + begin);
      } else {  // ZeRO-2 keeps the shard; the bucket starts the next micro-batch at 0
        reduce_scatter_add(comm, shards, r, full, grad_shard.data(), alloc);
        std::fill(full, full + r.count(), 0.0f);
      }
    }
  }

  void param_gather(const Action& a, uint32_t index) {
    if (l.zero >= 3) return zero3.gather(index, action_ranges(layout, a), param_shard.data());
    const ElementRange mine = shards.mine();
    for (const ElementRange r : action_ranges(layout, a)) {
      const int64_t begin = std::clamp(r.begin, mine.begin, mine.end);
      all_gather_range(groups.get(a.group), shards, r, params.data() + begin,
                       params.data() + r.begin);
    }
  }

  // Adam on what this rank owns: everything, or its ZeRO shard (stored padded under ZeRO; a shard
  // shorter than the padding is stepped through a padded copy).
  void optimizer_step() {
    if (l.zero == 0) return adam_step(settings.adam, adam, params.span(), grads.span());
    const ElementRange mine = shards.mine();
    const auto n = static_cast<size_t>(shards.padded());
    const auto padded = [&](float* p, Buffer<float>& scratch) {
      if (mine.count() == shards.padded()) return std::span<float>(p, n);
      scratch = alloc.allocate<float>(MemoryCategory::buffers, shards.padded(), "padded shard");
      std::copy(p, p + mine.count(), scratch.data());
      return scratch.span();
    };
    Buffer<float> p_scratch, g_scratch;
    const std::span<float> p =
        l.zero >= 3 ? param_shard.span() : padded(params.data() + mine.begin, p_scratch);
    const std::span<float> g =
        l.zero >= 2 ? grad_shard.span() : padded(grads.data() + mine.begin, g_scratch);
    adam_step(settings.adam, adam, p, g);
    if (!p_scratch.empty())
      std::copy(p.data(), p.data() + mine.count(), params.data() + mine.begin);
  }

  // What this rank's optimizer owns of the parameters: the flat buffer, or under ZeRO its shard.
  const float* owned_params() const {
    if (l.zero >= 3) return param_shard.data();
    return l.zero >= 1 ? params.data() + shards.mine().begin : params.data();
  }

  // This rank's whole flat buffer (layout.total) of what it owns (`owned`): a copy, or under ZeRO
  // the ZeRO shards gathered.
  std::vector<float> rank_flat(const float* owned) {
    std::vector<float> flat(static_cast<size_t>(layout.total));
    if (l.zero == 0)
      std::copy(owned, owned + layout.total, flat.data());
    else
      all_gather_range(groups.get(zero_group), shards, {0, layout.total}, owned, flat.data());
    return flat;
  }

  // What this rank owns (`owned`: parameters or an Adam moment) in the whole model's flat layout,
  // on rank 0.
  std::vector<float> whole(const float* owned) {
    return to_whole_layout(m, layout, program.coord, rank_flat(owned));
  }

  // This rank's ZeRO shard of `flat` into the padded shard buffer `into` (zeros past its end).
  void own_shard(const float* flat, Buffer<float>& into) const {
    const ElementRange mine = shards.mine();
    std::fill(into.data(), into.data() + into.size(), 0.0f);
    std::copy(flat + mine.begin, flat + mine.end, into.data());
  }

  // An action outside the units' passes.
  void run_action(size_t i, std::vector<ActionTiming>& timings) {
    const Action& a = program.actions[i];
    const double t0 = MPI_Wtime();
    switch (a.kind) {
      case ActionKind::send:
      case ActionKind::recv:
        p2p(a);
        break;
      case ActionKind::grad_reduce:
        grad_reduce(a);
        break;
      case ActionKind::param_gather:
        param_gather(a, static_cast<uint32_t>(i));
        break;
      case ActionKind::optimizer_step:
        optimizer_step();
        break;
      default:
        assert(false);
    }
    timings[i] = {t0 - step_start, MPI_Wtime() - step_start};
    ran[i] = 1;
  }

  // ZeRO-3: before the unit pass at `next`, the gathers ready to run ahead (FSDP's prefetch).
  void prefetch(size_t next, std::vector<ActionTiming>& timings) {
    if (l.zero < 3) return;
    while (const std::optional<size_t> g = ready_gather(program, next, ran))
      run_action(*g, timings);
  }

  void inject_fault(size_t action) {
    const InjectedFault& f = settings.fault;
    if (f.rank != program.rank || f.step != step || action != program.actions.size() / 2) return;
    if (f.kill) std::raise(SIGKILL);
    throw std::runtime_error("injected fault in step " + std::to_string(step));
  }
};

RankInterpreter::RankInterpreter(const Model& m, const Training& t, const Layout& l,
                                 const TextTokens& text, const InterpreterSettings& settings)
    : s_(std::make_unique<State>(m, t, l, text, settings)) {}

RankInterpreter::~RankInterpreter() = default;

const Program& RankInterpreter::program() const {
  return s_->program;
}
const TensorAllocator& RankInterpreter::allocator() const {
  return s_->alloc;
}

StepMeasurement RankInterpreter::run_step(int64_t step) {
  State& s = *s_;
  s.step = step;
  s.loss_sum = 0;
  for (Buffer<float>* b : {&s.grads, &s.grad_shard})
    std::fill(b->data(), b->data() + b->size(), 0.0f);
  StepMeasurement out;
  const auto& actions = s.program.actions;
  out.timings.resize(actions.size());
  s.ran.assign(actions.size(), 0);
  MPI_Barrier(MPI_COMM_WORLD);
  s.step_start = MPI_Wtime();
  for (size_t i = 0; i < actions.size();) {
    s.inject_fault(i);
    const Action& a = actions[i];
    if (a.kind == ActionKind::compute || a.kind == ActionKind::collective) {
      size_t j = i + 1;
      while (j < actions.size() && same_unit_pass(a, actions[j])) ++j;
      s.prefetch(i, out.timings);
      s.unit_pass(i, j, out.timings);
      i = j;
      continue;
    }
    if (!s.ran[i]) s.run_action(i, out.timings);
    ++i;
  }
  s.reap_sends(true);
  assert(s.live.empty() && s.zero3.empty());
  const double elapsed = MPI_Wtime() - s.step_start;
  MPI_Allreduce(&elapsed, &out.step_time_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // The loss is the same on every tp rank of the last stage: count tp rank 0's (of every cp rank,
  // each holding its own tokens).
  const double mine = s.shard.head && s.program.coord.tp == 0 ? s.loss_sum : 0.0;
  MPI_Allreduce(&mine, &out.loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  out.loss /= static_cast<double>(s.t.global_batch * s.t.seq_len);
  return out;
}

std::vector<float> RankInterpreter::gather_full_parameters() {
  State& s = *s_;
  return s.whole(s.owned_params());
}

FullState RankInterpreter::gather_full_state() {
  State& s = *s_;
  FullState out;
  out.params = gather_full_parameters();
  out.adam_m = s.whole(s.adam.m.data());
  out.adam_v = s.whole(s.adam.v.data());
  out.adam_step = s.adam.step;
  return out;
}

void RankInterpreter::load_full_state(const FullState& state) {
  State& s = *s_;
  // Each of what this rank owns taken from the whole model's layout: its flat buffer, or its
  // ZeRO shard of it (parameters under ZeRO-3, Adam's moments under ZeRO-1 and above).
  std::vector<float> flat(static_cast<size_t>(s.layout.total));
  for (auto [whole, into, sharded] :
       {std::tuple{&state.params, s.l.zero >= 3 ? &s.param_shard : &s.params, s.l.zero >= 3},
        std::tuple{&state.adam_m, &s.adam.m, s.l.zero >= 1},
        std::tuple{&state.adam_v, &s.adam.v, s.l.zero >= 1}}) {
    from_whole_layout(s.m, s.layout, *whole, flat.data());
    if (sharded)
      s.own_shard(flat.data(), *into);
    else
      std::copy(flat.begin(), flat.end(), into->data());
  }
  s.adam.step = state.adam_step;
  MPI_Bcast(&s.adam.step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
}

}  // namespace shardplan
