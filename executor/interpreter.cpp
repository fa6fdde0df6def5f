#include "executor/interpreter.h"

#include <mpi.h>

#include <algorithm>
#include <cassert>
#include <csignal>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "executor/block.h"
#include "executor/context_parallel.h"
#include "executor/cuda_rank.h"
#include "executor/embedding.h"
#include "executor/lm_head.h"
#include "executor/param_init.h"
#include "executor/rank_runtime.h"
#include "executor/whole_layout.h"

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

// Elements of the tensors `pick` selects (they are contiguous in the layout).
template <class Pick>
ElementRange tensors_range(const ParamLayout& layout, Pick pick) {
  ElementRange r{layout.total, 0};
  for (const ParamTensor& t : layout.tensors)
    if (pick(t)) {
      r.begin = std::min(r.begin, t.offset);
      r.end = std::max(r.end, t.offset + t.count());
    }
  return r.end > r.begin ? r : ElementRange{};
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

// The runtime of the settings' backend for `p`'s rank.
std::unique_ptr<RankRuntime> rank_runtime(const InterpreterSettings& s, const Program& p) {
  return s.backend == Backend::cuda ? cuda_runtime(p, s.cuda) : mpi_runtime(p);
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

// A unit's pass as one call into the layer code: actions [first, last), their tp and cp calls.
struct UnitPassRun {
  size_t first = 0, last = 0;
  Stamp start, end;
  std::vector<TimedCall> calls;
};

struct RankInterpreter::State {
  const Model& m;
  Training t;
  Layout l;
  const TextTokens& text;
  InterpreterSettings settings;
  Program program;
  std::unique_ptr<RankRuntime> rt;  // before every Buffer: its allocator outlives them
  TensorAllocator& alloc;
  Kernels<float>& dev;
  StepStreams& streams;
  GroupComm &tp, &cp;
  RankShard shard;
  ParamLayout layout;
  LayerDims dims;
  MatmulStats matmul;
  LayerContext<float> ctx{alloc, tp, &matmul, &cp, &dev};
  Group zero_group;   // the dense weights' replicas, which ZeRO shards over: dp, or dp·cp
  FlatShards shards;  // ZeRO's shards of the flat buffer over zero_group
  Buffer<float> params, grads;            // the full flat buffers (work copies under ZeRO-3 / 2+)
  Buffer<float> param_shard, grad_shard;  // ZeRO-3 / ZeRO-2+: this rank's padded shard
  AdamState adam;
  std::map<std::pair<int, int>, MicroBatch> live;  // by (micro-batch, chunk)
  int64_t step = 0;
  double loss_sum = 0;
  // This step's stamps: every action's start and end (a unit pass's actions share its end), the
  // unit passes with their tp and cp calls, and the gradient ranges reduced so far.
  std::vector<Stamp> starts, ends;
  std::vector<UnitPassRun> passes;
  std::vector<std::pair<ElementRange, Stamp>> reductions;

  State(const Model& model, const Training& training, const Layout& lay, const TextTokens& tx,
        const InterpreterSettings& st)
      : m(model),
        t(training),
        l(lay),
        text(tx),
        settings(st),
        program(checked(build_program(model, training, lay, world_rank()), lay)),
        rt(rank_runtime(settings, program)),
        alloc(rt->allocator()),
        dev(rt->kernels()),
        streams(rt->streams()),
        tp(rt->group(Group::tp)),
        cp(rt->group(Group::cp)),
        shard(rank_shard(model, lay, program.coord)),
        layout(param_layout(model, shard)),
        dims(layer_dims(model, shard, lay.micro_batch, training.seq_len,
                        lay.sequence_parallel && lay.tp > 1, lay.cp, program.coord.cp)),
        zero_group(dense_dp_group(lay)),
        shards{layout.total, group_size(lay, zero_group),
               rank_in_group(lay, program.rank, zero_group)} {
    const bool zero3 = l.zero >= 3, zero2 = l.zero >= 2;
    params = alloc.allocate<float>(zero3 ? MemoryCategory::buffers : MemoryCategory::parameters,
                                   layout.total, zero3 ? "gathered parameters" : "parameters");
    grads = alloc.allocate<float>(zero2 ? MemoryCategory::buffers : MemoryCategory::gradients,
                                  layout.total, zero2 ? "gradient accumulation" : "gradients");
    {
      std::vector<float> initial(static_cast<size_t>(layout.total));
      init_parameters<float>(m, layout, settings.seed, initial);
      to_device(params.data(), initial);
    }
    if (zero3) {
      param_shard =
          alloc.allocate<float>(MemoryCategory::parameters, shards.padded(), "parameter shard");
      own_shard(params.data(), param_shard);
    }
    if (zero2)
      grad_shard =
          alloc.allocate<float>(MemoryCategory::gradients, shards.padded(), "gradient shard");
    adam = adam_state(alloc, l.zero >= 1 ? shards.padded() : layout.total);
  }

  template <class T>
  void to_device(T* into, const std::vector<T>& host) {
    dev.copy_from_host(into, host.data(), static_cast<int64_t>(host.size() * sizeof(T)));
  }

  ElementRange embedding_range() const {
    return tensors_range(layout, [](const ParamTensor& x) {
      return x.component == ParamComponent::embedding ||
             x.component == ParamComponent::position_embedding;
    });
  }
  ElementRange head_range() const {
    return tensors_range(layout, [](const ParamTensor& x) {
      return x.layer < 0 &&
             (x.component == ParamComponent::norms || x.component == ParamComponent::head);
    });
  }

  // The flat-buffer ranges of a bucket or gather: its units' tensors, adjacent ones merged.
  std::vector<ElementRange> ranges_of(const Action& a) const {
    std::vector<ElementRange> out;
    const auto add = [&](ElementRange r) {
      if (r.count() == 0) return;
      if (!out.empty() && out.back().end == r.begin)
        out.back().end = r.end;
      else
        out.push_back(r);
    };
    if (has_part(a.parts, Part::embedding)) add(embedding_range());
    for (int layer = a.layer_begin; layer < a.layer_end; ++layer) add(layout.layer_range(layer));
    if (has_part(a.parts, Part::head)) add(head_range());
    return out;
  }

  // The gradients a unit's backward pass adds to (the head's include a tied word embedding).
  std::vector<ElementRange> written_by(const Action& a) const {
    switch (unit_of(a)) {
      case UnitKind::embedding:
        return {embedding_range()};
      case UnitKind::layer:
        return {layout.layer_range(a.layer_begin)};
      case UnitKind::head:
        return {head_range(), embedding_range()};
    }
    return {};
  }

  // Where action `a` runs: a unit pass on the compute stream (its tp and cp collectives go to
  // their streams and back inside it), every other action on its program stream.
  static Stream run_stream(const Action& a) {
    return a.kind == ActionKind::compute || a.kind == ActionKind::collective ? Stream::compute
                                                                             : a.stream;
  }

  // Selects the stream of actions [first, last) and makes it wait for their dependencies on other
  // streams (and, going backward, for reductions still reading the gradients it adds to); then
  // stamps their start.
  void begin_actions(size_t first, size_t last) {
    const Action& a = program.actions[first];
    const Stream s = run_stream(a);
    streams.select(s);
    for (size_t k = first; k < last; ++k)
      for (uint32_t d : program.deps_of(program.actions[k]))
        if (d < first && run_stream(program.actions[d]) != s) streams.wait(ends[d]);
    const bool unit_backward = s == Stream::compute && a.kind != ActionKind::optimizer_step &&
                               (a.pass == Pass::backward || a.pass == Pass::recompute);
    if (unit_backward)
      for (const ElementRange w : written_by(a))
        for (const auto& [range, done] : reductions)
          if (range.begin < w.end && w.begin < range.end) streams.wait(done);
    for (size_t k = first; k < last; ++k) starts[k] = streams.stamp();
  }
  void end_actions(size_t first, size_t last) {
    const Stamp end = streams.stamp();
    for (size_t k = first; k < last; ++k) ends[k] = end;
  }

  // A buffer for an action on a communication stream. Its block may have served the compute
  // stream a moment ago and is zeroed there, so the selected stream waits for the compute stream
  // first; release it with rt->release_after_use.
  template <class T = float>
  Buffer<T> side_buffer(MemoryCategory category, int64_t count, const char* what) {
    Buffer<T> b = alloc.allocate<T>(category, count, what);
    const Stream s = streams.selected();
    if (s != Stream::compute) {
      streams.select(Stream::compute);
      const Stamp now = streams.stamp();
      streams.select(s);
      streams.wait(now);
    }
    return b;
  }

  MicroBatch& micro_batch(const Action& a) {
    auto [it, fresh] = live.try_emplace({a.micro_batch, a.chunk});
    MicroBatch& mb = it->second;
    if (fresh) {
      const Stream s = streams.selected();
      streams.select(Stream::compute);  // where the layers read the tokens
      mb.inputs = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "input tokens");
      mb.targets = alloc.allocate<int32_t>(MemoryCategory::buffers, dims.tokens(), "target tokens");
      sample_tokens(a.micro_batch, mb);
      streams.select(s);
    }
    return mb;
  }

  // The micro-batch's sequences, the same on every cp rank of a dp rank; under context parallelism
  // this rank's tokens of them.
  void sample_tokens(int micro_batch, MicroBatch& mb) {
    const int64_t first =
        first_sequence(program.coord.dp, micro_batch, l.micro_batch, l.num_microbatches);
    const auto whole = static_cast<size_t>(l.micro_batch * t.seq_len);
    std::vector<int32_t> inputs(whole), targets(whole);
    sample_micro_batch(text, settings.seed, step, first, l.micro_batch, t.seq_len, inputs, targets);
    if (l.cp > 1)
      for (std::vector<int32_t>* tokens : {&inputs, &targets}) {
        std::vector<int32_t> mine(static_cast<size_t>(dims.tokens()));
        take_local_tokens(dims, tokens->data(), mine.data());
        tokens->swap(mine);
      }
    to_device(mb.inputs.data(), inputs);
    to_device(mb.targets.data(), targets);
  }

  void p2p(const Action& a) {
    const bool forward = a.pass == Pass::forward;
    const int64_t n = dims.local_tokens() * dims.hidden;
    MicroBatch& mb = micro_batch(a);
    if (a.kind == ActionKind::recv) {
      Buffer<float>& into = forward ? mb.x : mb.grad;
      into = side_buffer(forward ? MemoryCategory::activations : MemoryCategory::buffers, n,
                         forward ? "received activation" : "received gradient");
      rt->p2p().recv(into.data(), n, a.peer, a.tag, a.pass);
    } else {
      Buffer<float> out = std::move(forward ? mb.x : mb.grad);
      assert(out.size() == n);
      rt->p2p().send(std::move(out), a.peer, a.tag, a.pass);
      if (!forward) live.erase({a.micro_batch, a.chunk});
    }
    rt->p2p().finish_sends(false);
  }

  // One unit's pass of a micro-batch: actions [first, last) of the program.
  void unit_pass(size_t first, size_t last) {
    const Action& a = program.actions[first];
    MicroBatch& mb = micro_batch(a);
    begin_actions(first, last);
    const float* w = params.data();
    float* g = grads.data();
    UnitPassRun& run = passes.emplace_back();
    run.first = first;
    run.last = last;
    run.start = starts[first];
    tp.calls = cp.calls = &run.calls;
    const bool forward = a.pass == Pass::forward;
    switch (unit_of(a)) {
      case UnitKind::embedding: {
        const ParamTensor& wte = layout.get("wte");
        const float* wpe = w + layout.get("wpe").offset;
        if (forward) {
          mb.x = embedding_forward(dims, mb.inputs.data(), w + wte.offset, rows_of(wte), wpe, ctx);
        } else {
          embedding_backward(dims, mb.inputs.data(), mb.grad.data(), rows_of(wte), g + wte.offset,
                             g + layout.get("wpe").offset, ctx);
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
    tp.calls = cp.calls = nullptr;
    end_actions(first, last);
    run.end = ends[first];
  }

  // The layers' tp and cp calls matched in order to the pass's collective actions (the vocabulary-
  // parallel cross-entropy's small all-reduces are inside the head's compute action, as the
  // schedule says); a compute action runs from the collective before it to the one after it.
  void attribute(const UnitPassRun& run, std::vector<ActionTiming>& timings) const {
    const size_t first = run.first, last = run.last;
    const double t0 = streams.seconds(run.start), t1 = streams.seconds(run.end);
    size_t next = 0;
    const auto& calls = run.calls;
    for (size_t i = first; i < last; ++i) {
      const Action& a = program.actions[i];
      if (a.kind != ActionKind::collective) continue;
      while (next < calls.size() && (calls[next].op != a.op || calls[next].group != a.group))
        ++next;
      const double at = i > first ? timings[i - 1].end_s : t0;
      timings[i] = next < calls.size() ? ActionTiming{streams.seconds(calls[next].start),
                                                      streams.seconds(calls[next].end)}
                                       : ActionTiming{at, at};
      if (next < calls.size()) ++next;
    }
    double cursor = t0;
    for (size_t i = first; i < last; ++i) {
      if (program.actions[i].kind == ActionKind::collective) {
        cursor = timings[i].end_s;
        continue;
      }
      size_t j = i + 1;
      while (j < last && program.actions[j].kind != ActionKind::collective) ++j;
      timings[i] = {cursor, j < last ? timings[j].start_s : t1};
    }
  }

  // Every action's start and end in seconds from the step's start (after the step's streams ended).
  std::vector<ActionTiming> timings() const {
    std::vector<ActionTiming> out(program.actions.size());
    for (size_t i = 0; i < out.size(); ++i)
      if (starts[i].index >= 0) out[i] = {streams.seconds(starts[i]), streams.seconds(ends[i])};
    for (const UnitPassRun& run : passes) attribute(run, out);
    return out;
  }

  // Gradient sums over `comm` of the tensors in `range` (replicated norms over tp, the tied
  // embedding over the first and last stage) where this rank keeps its reduced gradients: the
  // whole buffer, or under ZeRO its shard (gathered over zero_group for the sum, then put back:
  // the two stages' shards cover different tensors).
  void all_reduce_tensor_grads(GroupComm& comm, ElementRange range) {
    if (l.zero == 0)
      return comm.all_reduce({grads.data() + range.begin, static_cast<size_t>(range.count())},
                             ReduceOp::sum);
    const ElementRange mine = shards.mine();
    const int64_t begin = std::clamp(range.begin, mine.begin, mine.end),
                  end = std::clamp(range.end, mine.begin, mine.end);
    float* owned = l.zero >= 2 ? grad_shard.data() + (begin - mine.begin) : grads.data() + begin;
    Buffer<float> full = side_buffer(MemoryCategory::buffers, range.count(), "gradient gather");
    rt->group(zero_group).all_gather_range(shards, range, owned, full.data());
    comm.all_reduce(full.span(), ReduceOp::sum);
    dev.copy(owned, full.data() + (begin - range.begin), end - begin);
    rt->release_after_use(std::move(full));
  }

  void grad_reduce(const Action& a) {
    if (a.group == Group::tp) {
      for (const ParamTensor& x : layout.tensors)
        if (x.split == TensorSplit::replicated)
          all_reduce_tensor_grads(tp, {x.offset, x.offset + x.count()});
      return;
    }
    if (a.group == Group::pp) {
      const ParamTensor& x = layout.get(shard.embedding ? "wte" : "lm_head");
      return all_reduce_tensor_grads(*rt->embedding_group(), {x.offset, x.offset + x.count()});
    }
    GroupComm& comm = rt->group(a.group);
    const ElementRange mine = shards.mine();
    for (const ElementRange r : ranges_of(a)) {
      if (a.op == Collective::all_reduce) {
        comm.all_reduce({grads.data() + r.begin, static_cast<size_t>(r.count())}, ReduceOp::sum);
        continue;
      }
      const int64_t begin = std::clamp(r.begin, mine.begin, mine.end),
                    end = std::clamp(r.end, mine.begin, mine.end);
      Buffer<float> part =
          side_buffer(MemoryCategory::buffers, end - begin, "reduce-scatter output");
      comm.reduce_scatter_range(shards, r, grads.data() + r.begin, part.data());
      if (l.zero == 1) {
        dev.copy(grads.data() + begin, part.data(), part.size());
      } else {  // ZeRO-2/3 keep the shard; the accumulation buffer starts the next micro-batch at 0
        dev.residual_add(grad_shard.data() + (begin - mine.begin), part.data(), nullptr, 1,
                         part.size());
        dev.fill(grads.data() + r.begin, r.count(), 0.0f);
      }
      rt->release_after_use(std::move(part));
    }
  }

  void param_gather(const Action& a) {
    const ElementRange mine = shards.mine();
    for (const ElementRange r : ranges_of(a)) {
      const int64_t begin = std::clamp(r.begin, mine.begin, mine.end);
      const float* part =
          l.zero >= 3 ? param_shard.data() + (begin - mine.begin) : params.data() + begin;
      rt->group(a.group).all_gather_range(shards, r, part, params.data() + r.begin);
    }
  }

  // Adam on what this rank owns: everything, or its ZeRO shard (stored padded under ZeRO; a shard
  // shorter than the padding is stepped through a padded copy).
  void optimizer_step() {
    if (l.zero == 0) return adam_step(dev, settings.adam, adam, params.span(), grads.span());
    const ElementRange mine = shards.mine();
    const auto n = static_cast<size_t>(shards.padded());
    const auto padded = [&](float* p, Buffer<float>& scratch) {
      if (mine.count() == shards.padded()) return std::span<float>(p, n);
      scratch = alloc.allocate<float>(MemoryCategory::buffers, shards.padded(), "padded shard");
      dev.copy(scratch.data(), p, mine.count());
      return scratch.span();
    };
    Buffer<float> p_scratch, g_scratch;
    const std::span<float> p =
        l.zero >= 3 ? param_shard.span() : padded(params.data() + mine.begin, p_scratch);
    const std::span<float> g =
        l.zero >= 2 ? grad_shard.span() : padded(grads.data() + mine.begin, g_scratch);
    adam_step(dev, settings.adam, adam, p, g);
    if (!p_scratch.empty()) dev.copy(params.data() + mine.begin, p.data(), mine.count());
  }

  // What this rank's optimizer owns of the parameters: the flat buffer, or under ZeRO its shard.
  const float* owned_params() const {
    if (l.zero >= 3) return param_shard.data();
    return l.zero >= 1 ? params.data() + shards.mine().begin : params.data();
  }

  // This rank's whole flat buffer (layout.total) of what it owns (`owned`), on the host: a copy,
  // or under ZeRO the ZeRO shards gathered.
  std::vector<float> rank_flat(const float* owned) {
    std::vector<float> flat(static_cast<size_t>(layout.total));
    streams.select(Stream::compute);
    Buffer<float> gathered;
    if (l.zero > 0) {
      gathered = alloc.allocate<float>(MemoryCategory::buffers, layout.total, "gathered state");
      rt->group(zero_group).all_gather_range(shards, {0, layout.total}, owned, gathered.data());
      owned = gathered.data();
    }
    dev.copy_to_host(flat.data(), owned, layout.total * static_cast<int64_t>(sizeof(float)));
    return flat;
  }

  // What this rank owns (`owned`: parameters or an Adam moment) in the whole model's flat layout,
  // on rank 0.
  std::vector<float> whole(const float* owned) {
    return to_whole_layout(m, layout, program.coord, rank_flat(owned));
  }

  // This rank's ZeRO shard of `flat` (on the device) into the padded shard buffer `into` (zeros
  // past its end).
  void own_shard(const float* flat, Buffer<float>& into) {
    const ElementRange mine = shards.mine();
    dev.fill(into.data(), into.size(), 0.0f);
    dev.copy(into.data(), flat + mine.begin, mine.count());
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
  s.streams.select(Stream::compute);
  s.dev.fill(s.grads.data(), s.grads.size(), 0.0f);
  if (!s.grad_shard.empty()) s.dev.fill(s.grad_shard.data(), s.grad_shard.size(), 0.0f);
  const auto& actions = s.program.actions;
  s.starts.assign(actions.size(), Stamp{});
  s.ends.assign(actions.size(), Stamp{});
  s.passes.clear();
  s.reductions.clear();
  s.dev.synchronize();
  MPI_Barrier(MPI_COMM_WORLD);
  s.streams.begin_step();
  for (size_t i = 0; i < actions.size();) {
    s.inject_fault(i);
    const Action& a = actions[i];
    if (a.kind == ActionKind::compute || a.kind == ActionKind::collective) {
      size_t j = i + 1;
      while (j < actions.size() && same_unit_pass(a, actions[j])) ++j;
      s.unit_pass(i, j);
      i = j;
      continue;
    }
    s.begin_actions(i, i + 1);
    switch (a.kind) {
      case ActionKind::send:
      case ActionKind::recv:
        s.p2p(a);
        break;
      case ActionKind::grad_reduce:
        s.grad_reduce(a);
        break;
      case ActionKind::param_gather:
        s.param_gather(a);
        break;
      case ActionKind::optimizer_step:
        s.optimizer_step();
        break;
      default:
        assert(false);
    }
    s.end_actions(i, i + 1);
    if (a.kind == ActionKind::grad_reduce)
      for (const ElementRange r : s.ranges_of(a)) s.reductions.emplace_back(r, s.ends[i]);
    s.rt->finish_releases(false);
    ++i;
  }
  s.rt->p2p().finish_sends(true);
  const double elapsed = s.streams.end_step();
  s.rt->finish_releases(true);
  assert(s.live.empty());
  StepMeasurement out;
  out.timings = s.timings();
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
  s.streams.select(Stream::compute);
  std::vector<float> flat(static_cast<size_t>(s.layout.total));
  from_whole_layout(s.m, s.layout, state.params, flat.data());
  s.to_device(s.params.data(), flat);
  if (s.l.zero >= 3) s.own_shard(s.params.data(), s.param_shard);
  for (auto [whole, into] :
       {std::pair{&state.adam_m, &s.adam.m}, std::pair{&state.adam_v, &s.adam.v}}) {
    from_whole_layout(s.m, s.layout, *whole, flat.data());
    if (s.l.zero == 0) {
      s.to_device(into->data(), flat);
      continue;
    }
    Buffer<float> on_device =
        s.alloc.allocate<float>(MemoryCategory::buffers, s.layout.total, "loaded state");
    s.to_device(on_device.data(), flat);
    s.own_shard(on_device.data(), *into);
  }
  s.dev.synchronize();
  s.adam.step = state.adam_step;
  MPI_Bcast(&s.adam.step, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
}

}  // namespace shardplan
