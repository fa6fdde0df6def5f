#include "executor/interpreter.h"

#include <algorithm>
#include <cassert>
#include <csignal>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "executor/interpreter_state.h"
#include "executor/layers/context_parallel.h"
#include "executor/layers/embedding.h"
#include "executor/program_calls.h"
#include "executor/runtime/cuda_rank.h"
#include "executor/runtime/world_comm.h"
#include "executor/state/action_ranges.h"
#include "executor/state/param_init.h"

namespace shardplan {

namespace {

enum class UnitKind { embedding, layer, head };

UnitKind unit_of(const Action& a) {
  if (has_part(a.parts, Part::embedding)) return UnitKind::embedding;
  if (has_part(a.parts, Part::head) || has_part(a.parts, Part::head_norm)) return UnitKind::head;
  return UnitKind::layer;
}

// Consecutive compute and collective actions of one unit's pass (recompute belongs to backward):
// the interpreter runs them as one call into the layer code.
bool same_unit_pass(const Action& a, const Action& b) {
  const auto in_pass = [](const Action& x) {
    return x.kind == ActionKind::compute || x.kind == ActionKind::collective;
  };
  const auto call = [](Pass p) { return p == Pass::recompute ? Pass::backward : p; };
  return in_pass(a) && in_pass(b) && a.micro_batch == b.micro_batch && a.chunk == b.chunk &&
         a.layer_begin == b.layer_begin && a.layer_end == b.layer_end && unit_of(a) == unit_of(b) &&
         call(a.pass) == call(b.pass);
}

ElementRange rows_of(const ParamTensor& t) {
  return {t.row_begin, t.row_begin + t.local_rows};
}

const Program& checked(const Program& p, const Layout& l) {
  if (l.ep > 1)
    throw InputError("layout", "layout.ep", "the executor does not run expert parallelism",
                     "use ep=1");
  const int world = world_size();
  if (world != l.world())
    throw InputError(
        "layout", "layout",
        "needs " + std::to_string(l.world()) + " ranks, mpirun started " + std::to_string(world),
        "run it under mpirun -np " + std::to_string(l.world()));
  return p;
}

// The runtime of the settings' backend for `p`'s rank, wrapped as they say.
std::unique_ptr<RankRuntime> rank_runtime(const InterpreterSettings& s, const Program& p) {
  std::unique_ptr<RankRuntime> rt =
      s.backend == Backend::cuda ? cuda_runtime(p, s.cuda) : mpi_runtime(p);
  rt->allocator().set_poison_for_overwrite(s.poison_for_overwrite);
  return s.wrap_runtime ? s.wrap_runtime(std::move(rt)) : std::move(rt);
}

}  // namespace

template <class T>
RankState<T>::RankState(const Model& model, const Training& training, const Layout& lay,
                        const TextTokens& tx, const InterpreterSettings& st)
    : m(model),
      t(training),
      l(lay),
      text(tx),
      settings(st),
      program(checked(build_program(model, training, lay, world_rank()), lay)),
      rt(rank_runtime(settings, program)),
      alloc(rt->allocator()),
      dev(rt->kernels<T>()),
      streams(rt->streams()),
      tp(rt->group(Group::tp)),
      cp(rt->group(Group::cp)),
      shard(rank_shard(model, lay, program.coord)),
      layout(param_layout(model, shard)),
      dims(layer_dims(model, shard, lay.micro_batch, training.seq_len,
                      lay.sequence_parallel && lay.tp > 1, lay.cp, program.coord.cp)),
      zero_group(dense_dp_group(lay)),
      shards(zero_shards(program, layout, zero_group, group_size(lay, zero_group),
                         rank_in_group(lay, program.rank, zero_group))),
      zero3(*rt, zero_group, shards) {
  if constexpr (!std::is_same_v<T, float>) ctx.tp_compute = &tp.layers<float>();
  matmul.calls = settings.record_gemms;
  if (l.zero >= 3)
    param_shard = alloc.allocate_for_overwrite<T>(MemoryCategory::parameters, shards.padded(),
                                                  "parameter shard");
  else
    params =
        alloc.allocate_for_overwrite<T>(MemoryCategory::parameters, layout.total, "parameters");
  if (l.zero < 2)
    grads = alloc.allocate<T>(MemoryCategory::gradients, layout.total, "gradients");
  else if (l.zero == 2)
    grads = alloc.allocate<T>(MemoryCategory::buffers, layout.total, "gradient accumulation");
  if (l.zero >= 2)
    grad_shard = alloc.allocate<T>(MemoryCategory::gradients, shards.padded(), "gradient shard");
  adam = adam_state(alloc, l.zero >= 1 ? shards.padded() : layout.total,
                    /*master_weights=*/!std::is_same_v<T, float>);
  // Every rank initialises its own pieces (under ZeRO-3 only those, zeros past their ends, as
  // FSDP does).
  std::vector<float> initial;
  if (l.zero >= 3) {
    initial.resize(static_cast<size_t>(shards.padded()));
    for (size_t u = 0; u < shards.units.size(); ++u)
      init_parameters<float>(
          m, layout, settings.seed, shards.mine(u),
          std::span(initial).subspan(static_cast<size_t>(shards.offsets[u]),
                                     static_cast<size_t>(shards.mine(u).count())));
  } else {
    initial.resize(static_cast<size_t>(layout.total));
    init_parameters<float>(m, layout, settings.seed, initial);
  }
  set_owned_parameters(initial);
}

template <class T>
void RankState<T>::set_owned_parameters(const std::vector<float>& values) {
  to_device(l.zero >= 3 ? param_shard.data() : params.data(), values);
  if (adam.master.empty()) return;
  // The master weights cover what the optimizer steps: the flat buffer, or the padded shard.
  to_device(adam.master.data(), l.zero >= 1 && l.zero < 3 ? owned_part(values) : values);
}

template <class T>
std::vector<ElementRange> RankState<T>::written_by(const Action& a) const {
  switch (unit_of(a)) {
    case UnitKind::embedding:
      return {embedding_range(layout)};
    case UnitKind::layer:
      return {layout.layer_range(a.layer_begin)};
    case UnitKind::head:
      return {head_range(layout), embedding_range(layout)};
  }
  return {};
}

template <class T>
void RankState<T>::begin_actions(size_t first, size_t last) {
  const Action& a = program.actions[first];
  const Stream s = run_stream(a);
  streams.select(s);
  for (size_t k = first; k < last; ++k)
    for (uint32_t d : program.deps_of(program.actions[k]))
      if (d < first && run_stream(program.actions[d]) != s) streams.wait(ends[d]);
  const bool unit_backward =
      s == Stream::compute && a.kind != ActionKind::optimizer_step &&
      (a.pass == Pass::backward || a.pass == Pass::recompute || a.pass == Pass::weight_grad);
  if (unit_backward)
    for (const ElementRange w : written_by(a))
      for (const auto& [range, done] : reductions)
        if (range.begin < w.end && w.begin < range.end) streams.wait(done);
  for (size_t k = first; k < last; ++k) starts[k] = streams.stamp();
}

template <class T>
void RankState<T>::end_actions(size_t first, size_t last) {
  const Stamp end = streams.stamp();
  for (size_t k = first; k < last; ++k) ends[k] = end;
}

template <class T>
void RankState<T>::unit_pass(size_t first, size_t last) {
  const Action& a = program.actions[first];
  const bool forward = a.pass == Pass::forward;
  const std::optional<uint32_t> gather =
      l.zero >= 3 ? unit_gather(program, first, last) : std::nullopt;
  assert(gather || l.zero < 3 || shards.members == 1);
  begin_actions(first, last);
  T* const flat_w = l.zero >= 3 ? param_shard.data() : params.data();
  // Into the shard where no grad_reduce moves gradients there: a one-member zero group has none.
  const bool into_shard = l.zero >= 3 || (l.zero == 2 && shards.members == 1);
  T* const flat_g = into_shard ? grad_shard.data() : grads.data();
  const FlatView<const T> w =
      gather ? zero3.params(*gather) : FlatView<const T>::whole(flat_w, layout);
  const FlatView<T> g = forward ? FlatView<T>{}
                        : gather
                            ? zero3.start_gradients(*gather, last_compute(program, first, last))
                            : FlatView<T>::whole(flat_g, layout);
  UnitPassRun& run = passes.emplace_back();
  run.first = first;
  run.last = last;
  run.start = starts[first];
  tp.calls = cp.calls = &run.calls;
  const bool input_grad_only =
      std::any_of(program.actions.begin() + static_cast<std::ptrdiff_t>(first),
                  program.actions.begin() + static_cast<std::ptrdiff_t>(last),
                  [](const Action& x) { return (x.flags & kInputGradOnly) != 0; });
  run_unit(a, w, g, input_grad_only);
  tp.calls = cp.calls = nullptr;
  check_pass_calls(program, first, last, run.calls);
  if (gather) zero3.reshard(*gather);
  end_actions(first, last);
  run.end = ends[first];
}

template <class T>
void RankState<T>::run_unit(const Action& a, const FlatView<const T>& w, const FlatView<T>& g,
                            bool input_grad_only) {
  const std::tuple<int, int, int> layer_key{a.micro_batch, a.chunk, a.layer_begin};
  if (a.pass == Pass::weight_grad) {  // the micro-batch's B has sent its gradient on
    const auto kept = weight_grads.find(layer_key);
    assert(kept != weight_grads.end());
    kept->second.run(dev, &matmul);
    weight_grads.erase(kept);
    return;
  }
  MicroBatch<T>& mb = micro_batch(a);
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
      if (forward) {
        mb.x = block_forward(dims, wt, std::move(mb.x), l.recompute, mb.layers[layer], ctx);
        break;
      }
      if (input_grad_only)
        ctx.weight_grads = &weight_grads.try_emplace(layer_key, alloc).first->second;
      mb.grad = block_backward(dims, wt, block_tensors(layout, layer, g),
                               std::move(mb.layers.at(layer)), mb.grad.data(), ctx);
      ctx.weight_grads = nullptr;
      break;
    }
    case UnitKind::head: {
      if (forward) {
        loss_sum += head_forward(dims, head_tensors(layout, w), head_vocab(layout), std::move(mb.x),
                                 mb.targets.data(), mb.head, ctx);
      } else {
        const auto tokens = static_cast<compute_t<T>>(t.global_batch * t.seq_len);
        mb.grad = head_backward(dims, head_tensors(layout, w), head_tensors(layout, g),
                                head_vocab(layout), mb.targets.data(), std::move(mb.head),
                                compute_t<T>(1) / tokens, ctx);
      }
      break;
    }
  }
}

template <class T>
void RankState<T>::attribute(const UnitPassRun& run, std::vector<ActionTiming>& timings) const {
  const size_t first = run.first, last = run.last;
  const double t0 = streams.seconds(run.start), t1 = streams.seconds(run.end);
  size_t next = 0;  // the k-th call is the k-th collective action (check_pass_calls)
  for (size_t i = first; i < last; ++i)
    if (program.actions[i].kind == ActionKind::collective) {
      const TimedCall& c = run.calls[next++];
      timings[i] = {streams.seconds(c.start), streams.seconds(c.end)};
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

template <class T>
std::vector<ActionTiming> RankState<T>::timings() const {
  std::vector<ActionTiming> out(program.actions.size());
  for (size_t i = 0; i < out.size(); ++i)
    if (starts[i].index >= 0) out[i] = {streams.seconds(starts[i]), streams.seconds(ends[i])};
  for (const UnitPassRun& run : passes) attribute(run, out);
  return out;
}

template <class T>
void RankState<T>::run_action(size_t i) {
  const Action& a = program.actions[i];
  begin_actions(i, i + 1);
  switch (a.kind) {
    case ActionKind::send:
    case ActionKind::recv:
      p2p(i);
      break;
    case ActionKind::grad_reduce:
    case ActionKind::param_gather: {
      // Every call on the action's group is the action's: together they move its bytes.
      GroupComm& comm = a.group == Group::pp ? *rt->embedding_group() : rt->group(a.group);
      std::vector<TimedCall> calls;
      comm.calls = &calls;
      if (a.kind == ActionKind::grad_reduce)
        grad_reduce(a);
      else
        param_gather(a, static_cast<uint32_t>(i));
      comm.calls = nullptr;
      check_moved(program, i, calls);
      break;
    }
    case ActionKind::optimizer_step:
      optimizer_step();
      break;
    default:
      assert(false);
  }
  end_actions(i, i + 1);
  // ZeRO-3's reductions read the unit's own gradients, which no later backward adds to.
  if (a.kind == ActionKind::grad_reduce && l.zero < 3)
    for (const ElementRange r : action_ranges(layout, a)) reductions.emplace_back(r, ends[i]);
  rt->finish_releases(false);
}

template <class T>
void RankState<T>::prefetch(size_t next) {
  if (l.zero < 3) return;
  while (const std::optional<size_t> g = ready_gather(program, next, starts)) run_action(*g);
}

template <class T>
void RankState<T>::inject_fault(size_t action) {
  const InjectedFault& f = settings.fault;
  // At the first action the loop reaches from halfway on: it moves a unit's actions at a time.
  if (f.rank != program.rank || f.step != step || action < program.actions.size() / 2 ||
      fault_injected)
    return;
  fault_injected = true;
  if (f.kind == FaultKind::kill) std::raise(SIGKILL);
  if (f.kind == FaultKind::stop) {
    std::raise(SIGSTOP);
    return;  // continued (SIGCONT): the step goes on
  }
  throw std::runtime_error("injected fault in step " + std::to_string(step));
}

template <class T>
StepMeasurement RankState<T>::run_step(int64_t step_index) {
  step = step_index;
  note_watchdog_step(step_index + 1);
  loss_sum = 0;
  streams.select(Stream::compute);
  for (Buffer<T>* b : {&grads, &grad_shard})
    if (!b->empty()) dev.fill(b->data(), b->size(), T(0));
  const auto& actions = program.actions;
  starts.assign(actions.size(), Stamp{});
  ends.assign(actions.size(), Stamp{});
  passes.clear();
  reductions.clear();
  dev.synchronize();
  world_barrier();
  streams.begin_step();
  const MatmulStats gemms_before = matmul;
  for (size_t i = 0; i < actions.size();) {
    inject_fault(i);
    const Action& a = actions[i];
    if (a.kind == ActionKind::compute || a.kind == ActionKind::collective) {
      size_t j = i + 1;
      while (j < actions.size() && same_unit_pass(a, actions[j])) ++j;
      prefetch(i);
      unit_pass(i, j);
      i = j;
      continue;
    }
    if (starts[i].index < 0) run_action(i);
    ++i;
  }
  rt->p2p().finish_sends(true);
  const double elapsed = streams.end_step();
  rt->finish_releases(true);
  assert(live.empty() && weight_grads.empty() && zero3.empty());
  StepMeasurement out;
  out.timings = timings();
  out.gemms.flops = matmul.flops - gemms_before.flops;
  out.gemms.seconds = matmul.seconds - gemms_before.seconds;
  out.step_time_s = world_max(elapsed);
  // The loss is the same on every tp rank of the last stage: count tp rank 0's (of every cp rank,
  // each holding its own tokens).
  const double mine = shard.head && program.coord.tp == 0 ? loss_sum : 0.0;
  out.loss = world_sum(mine) / static_cast<double>(t.global_batch * t.seq_len);
  return out;
}

// The members defined in this file, for both storage types (interpreter_data_parallel.cpp
// instantiates its own).
#define SHARDPLAN_INSTANTIATE(T)                                                   \
  template RankState<T>::RankState(const Model&, const Training&, const Layout&,   \
                                   const TextTokens&, const InterpreterSettings&); \
  template StepMeasurement RankState<T>::run_step(int64_t);
SHARDPLAN_INSTANTIATE(float)
SHARDPLAN_INSTANTIATE(bf16)
#undef SHARDPLAN_INSTANTIATE

bool runs_precision(const Training& t) {
  if (t.dtype == Dtype::fp32) return t.grad_dtype == Dtype::fp32 && !t.master_weights;
  return t.dtype == Dtype::bf16 && t.grad_dtype == Dtype::bf16 && t.master_weights;
}

namespace {

std::unique_ptr<InterpreterState> rank_state(const Model& m, const Training& t, const Layout& l,
                                             const TextTokens& text,
                                             const InterpreterSettings& settings) {
  if (!runs_precision(t))
    throw InputError("training", "training.dtype",
                     "the executor trains fp32 (grad_dtype fp32, no master weights) or bf16 "
                     "(grad_dtype bf16, fp32 master weights), not dtype " +
                         std::string(enum_name(t.dtype, kDtypeNames)) + " with grad_dtype " +
                         std::string(enum_name(t.grad_dtype, kDtypeNames)) +
                         (t.master_weights ? " and" : " without") + " master weights",
                     "plan with --dtype fp32 or --dtype bf16");
  if (t.fp8 != Fp8Recipe::none)
    throw InputError("training", "training.fp8",
                     "is " + std::string(enum_name(t.fp8, kFp8RecipeNames)) +
                         ": the executor runs its linear layers in the compute dtype, so it "
                         "cannot measure FP8 ones (estimate, plan and simulate price them)",
                     "execute with fp8 none");
  if (t.dtype == Dtype::bf16) return std::make_unique<RankState<bf16>>(m, t, l, text, settings);
  return std::make_unique<RankState<float>>(m, t, l, text, settings);
}

}  // namespace

RankInterpreter::RankInterpreter(const Model& m, const Training& t, const Layout& l,
                                 const TextTokens& text, const InterpreterSettings& settings)
    : s_(rank_state(m, t, l, text, settings)) {}

RankInterpreter::~RankInterpreter() = default;

const Program& RankInterpreter::program() const {
  return s_->rank_program();
}
const TensorAllocator& RankInterpreter::allocator() const {
  return s_->allocator();
}
StepMeasurement RankInterpreter::run_step(int64_t step) {
  return s_->run_step(step);
}

}  // namespace shardplan
