#include "simulator/stage_timing.h"

#include <algorithm>
#include <array>
#include <cassert>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedule_fold.h"
#include "simulator/action_cost.h"
#include "simulator/interference.h"
#include "simulator/pipeline_model.h"

namespace shardplan {

namespace {

// The groups of every stage sit alike on the topology when moving from one stage's ranks to the
// next shifts ranks by a multiple of every level's domain (and of the node): rank_of is linear in
// the coordinates, so each group of stage s is that of stage 0 shifted by s·stride.
bool stages_placed_alike(const Cluster& c, const Layout& l) {
  if (l.pp == 1) return true;
  const int64_t stride = rank_of(l, RankCoord{0, 0, 0, 0, 1}) - rank_of(l, RankCoord{});
  if (stride % c.devices_per_node != 0) return false;
  for (size_t i = 0; i + 1 < c.levels.size(); ++i)
    if (stride % c.level_span(i) != 0) return false;
  return true;
}

bool same_layers(const StageLayers& a, const StageLayers& b) {
  return a.dense_layers == b.dense_layers && a.moe_layers == b.moe_layers && a.first == b.first &&
         a.last == b.last;
}

// Communication time that one kind of window leaves on the critical path.
struct WindowLoad {
  double total_s = 0;
  double longest_call_s = 0;
  double stolen_s = 0;  // Σ calls' time × their interference share
};

// Whether a schedule's program leaves its pipeline messages off the critical path but in the
// fill and drain: GPipe runs every forward, then every backward, so a stage receives micro-batch
// i + 1 while it computes i. Under 1F1B and interleaved 1F1B each pass waits for the message its
// neighbour sent just before (Megatron-LM's send_forward_recv_backward; the program does not
// model --overlap-p2p-communication).
bool pipeline_messages_overlap(const Layout& l) {
  return l.schedule == Schedule::gpipe;
}

// `slowed_s`: what the compute of the window gains from the communication it hides.
double exposed_s(CommWindow w, const WindowLoad& load, const MicrobatchCompute& mc,
                 bool overlapped_p2p, StreamExecution streams, double slowed_s = 0) {
  if (load.total_s == 0) return 0;
  // One thread running every action in turn hides nothing.
  if (streams == StreamExecution::program_order) return load.total_s;
  switch (w) {
    case CommWindow::none:
      return load.total_s;
    // A prefetch cannot hide the first gather, nor overlapped reductions the last bucket.
    case CommWindow::forward:
      return std::max(load.longest_call_s, load.total_s - mc.forward.time_s() - slowed_s);
    case CommWindow::backward:
      return std::max(load.longest_call_s, load.total_s - mc.backward.time_s() -
                                               mc.weight_grad.time_s() - mc.recompute.time_s() -
                                               slowed_s);
    case CommWindow::pipeline:
      return overlapped_p2p ? 0 : load.total_s;
  }
  return load.total_s;
}

constexpr size_t kWindows = kCommWindowNames.size();

// Loads by window and by the stream the actions run on: streams run side by side (a ZeRO-3
// unit's gathers on zero-comm beside the gradient reduce-scatters on dp-comm), so what a window
// leaves exposed is its most exposed stream's; the actions on the critical path add up.
using Loads = std::array<std::array<WindowLoad, kNumStreams>, kWindows>;

// What a window leaves on the critical path: the compute its hidden communication slows (each
// stream's hidden time × its calls' mean interference share), and the communication still exposed
// past that slowed compute: where communication outlasts the compute, slowing the compute only
// hides more of it.
struct WindowCost {
  double exposed_s = 0;
  double interference_s = 0;
};

WindowCost window_cost(size_t w, const Loads& loads, const MicrobatchCompute& mc,
                       bool overlapped_p2p, StreamExecution streams) {
  const CommWindow window = static_cast<CommWindow>(w);
  const bool add = window == CommWindow::none || streams == StreamExecution::program_order;
  WindowCost out;
  for (const WindowLoad& load : loads[w])
    if (load.total_s > 0)
      out.interference_s += (load.total_s - exposed_s(window, load, mc, overlapped_p2p, streams)) *
                            load.stolen_s / load.total_s;
  for (const WindowLoad& load : loads[w]) {
    const double e = exposed_s(window, load, mc, overlapped_p2p, streams, out.interference_s);
    out.exposed_s = add ? out.exposed_s + e : std::max(out.exposed_s, e);
  }
  return out;
}

// The span of two ranks: a pipeline send's, or the tied embedding's first and last stage.
GroupSpan pair_span(const Cluster& c, int64_t a, int64_t b) {
  const std::array<int64_t, 2> pair{a, b};
  return ranks_span(c, Group::pp, pair);
}

// One communication action's span and cost per call.
struct PricedComm {
  GroupSpan span;
  GroupActionCost cost;  // a send's has no local work
  double interference_share = 0;
};

GroupSpan comm_span(const StageContext& ctx, const Action& a, int64_t rank, SpanCache& spans) {
  if (a.kind == ActionKind::send) return pair_span(ctx.c, rank, a.peer);
  if (a.kind == ActionKind::grad_reduce && a.group == Group::pp) {
    RankCoord first = rank_coord(ctx.l, rank), last = first;
    first.pp = 0;
    last.pp = ctx.l.pp - 1;
    return pair_span(ctx.c, rank_of(ctx.l, first), rank_of(ctx.l, last));
  }
  return spans(a.group);
}

PricedComm price_comm(const StageContext& ctx, const Action& a, int64_t rank, SpanCache& spans) {
  PricedComm p;
  p.span = comm_span(ctx, a, rank, spans);
  const auto price = [&] {
    if (a.kind == ActionKind::send)
      return GroupActionCost{send_cost(ctx.c, ctx.collective_options, a, p.span), 0};
    return group_action_cost(ctx.c, ctx.rates, ctx.collective_options, a, p.span, ctx.l.zero);
  };
  if (ctx.calls) {
    const CallKey key{a.kind, a.op, reads_cold_input(a), ctx.l.zero, a.bytes, a.params, p.span};
    p.cost = (*ctx.calls)(key, price);
  } else {
    p.cost = price();
  }
  // The share follows the action's stream, which the call's price leaves out.
  if (a.kind != ActionKind::send)
    p.interference_share = interference_share(ctx.c, a, p.span, p.cost.collective);
  return p;
}

// A stage's folded actions priced: compute per micro-batch, communication by window and
// stream, the optimizer step, and one record per kind and size of communication.
struct PricedActions {
  MicrobatchCompute compute;
  Loads per_mb{}, per_step{};
  // The pipeline messages of the fill and drain, exposed where the schedule overlaps the others:
  // the one thing of the passes' prices that tells GPipe from 1F1B (pipeline_messages_overlap).
  double fill_drain_s = 0;
  double optimizer_s = 0;
  double optimizer_bytes = 0;
  std::vector<CollectiveEstimate> records;
};

// Adds the folded actions of `rank` (one of its stage's), priced action by action. `spans` holds
// the groups of one rank of its stage (or of any stage when all are placed alike).
void price_into(const StageContext& ctx, int64_t rank, SpanCache& spans,
                const std::vector<FoldedAction>& folded, PricedActions& p) {
  const Layout& l = ctx.l;
  for (const FoldedAction& f : folded) {
    const Action& a = f.action;
    if (a.kind == ActionKind::compute) {
      add_compute(p.compute, compute_action_cost(ctx.parts, a, l.recompute),
                  static_cast<double>(f.per_microbatch));
      continue;
    }
    if (a.kind == ActionKind::optimizer_step) {
      p.optimizer_bytes += optimizer_step_bytes(ctx.t, a.params);
      p.optimizer_s += optimizer_step_time_s(ctx.rates, ctx.t, a.params);
      continue;
    }
    if (a.kind == ActionKind::recv) continue;  // its time is its send's
    const PricedComm priced = price_comm(ctx, a, rank, spans);
    const double call_s = priced.cost.time_s();
    const bool mb = f.per_microbatch > 0;
    const CommWindow window = comm_window(a);
    const int64_t calls = mb ? f.per_microbatch : f.per_step;
    WindowLoad& load =
        (mb ? p.per_mb : p.per_step)[static_cast<size_t>(window)][static_cast<size_t>(a.stream)];
    load.total_s += static_cast<double>(calls) * call_s;
    load.longest_call_s = std::max(load.longest_call_s, call_s);
    load.stolen_s += static_cast<double>(calls) * call_s * priced.interference_share;
    // The fill's forward sends and the drain's backward ones: p − 1 each.
    if (window == CommWindow::pipeline) p.fill_drain_s += (l.pp - 1) * call_s;
    const int64_t per_step_calls = mb ? calls * l.num_microbatches : calls;
    // The forward's and the backward's collectives of one kind and size read as one line.
    const auto same = std::find_if(p.records.begin(), p.records.end(), [&](const auto& r) {
      return r.window == window && (r.frequency == CommFrequency::per_microbatch) == mb &&
             r.action.kind == a.kind && r.action.op == a.op && r.action.group == a.group &&
             r.action.bytes == a.bytes && r.action.params == a.params &&
             reads_cold_input(r.action) == reads_cold_input(a) &&
             (a.kind != ActionKind::send || r.action.pass == a.pass);
    });
    if (same != p.records.end()) {
      same->calls_per_step += per_step_calls;
      same->volume_bytes += volume_bytes(a.op, a.bytes, priced.span.size, per_step_calls);
      same->total_s += static_cast<double>(per_step_calls) * call_s;
      continue;
    }
    p.records.push_back({a, mb ? CommFrequency::per_microbatch : CommFrequency::per_step, window,
                         priced.span, ctx.c.levels[priced.span.level].name, priced.cost.collective,
                         priced.cost.local_s, per_step_calls,
                         volume_bytes(a.op, a.bytes, priced.span.size, per_step_calls),
                         static_cast<double>(per_step_calls) * call_s, 0});
  }
}

// What the stage's priced actions leave on the critical path; with `records`, each record with
// its share of its window's exposed time.
StageTiming finish(const StageContext& ctx, const PricedActions& p,
                   std::vector<CollectiveEstimate>* records) {
  const Layout& l = ctx.l;
  const bool overlapped_p2p = pipeline_messages_overlap(l);
  StageTiming st;
  st.compute = p.compute;
  st.optimizer_s = p.optimizer_s;
  st.optimizer_bytes = p.optimizer_bytes;
  std::array<double, kWindows> exposed_mb{}, exposed_step{};
  for (size_t w = 0; w < kWindows; ++w) {
    const WindowCost mb = window_cost(w, p.per_mb, st.compute, overlapped_p2p, ctx.x.streams);
    const WindowCost step = window_cost(w, p.per_step, st.compute, overlapped_p2p, ctx.x.streams);
    exposed_mb[w] = mb.exposed_s;
    exposed_step[w] = step.exposed_s;
    st.microbatch_comm_s += mb.exposed_s;
    st.step_comm_s += step.exposed_s;
    st.microbatch_interference_s += mb.interference_s;
    st.step_interference_s += step.interference_s;
  }
  if (overlapped_p2p) st.step_comm_s += p.fill_drain_s;
  if (!records) return st;
  *records = p.records;
  // Each window's exposed time, shared among its actions by their share of its load.
  std::array<double, kWindows> load_mb{}, load_step{};
  for (size_t w = 0; w < kWindows; ++w)
    for (size_t stream = 0; stream < kNumStreams; ++stream) {
      load_mb[w] += p.per_mb[w][stream].total_s;
      load_step[w] += p.per_step[w][stream].total_s;
    }
  for (CollectiveEstimate& r : *records) {
    const size_t w = static_cast<size_t>(r.window);
    const bool mb = r.frequency == CommFrequency::per_microbatch;
    const double load_s = (mb ? load_mb : load_step)[w];
    const double per_call_total =
        static_cast<double>(mb ? r.calls_per_step / l.num_microbatches : r.calls_per_step) *
        (r.cost.time_s + r.local_s);
    if (load_s > 0)
      r.exposed_s =
          (mb ? exposed_mb[w] * l.num_microbatches : exposed_step[w]) * per_call_total / load_s;
    if (r.window == CommWindow::pipeline && overlapped_p2p)
      r.exposed_s += (l.pp - 1) * r.cost.time_s;
  }
  return st;
}

// The passes of one stage's program priced, kept for the layouts that differ from this one only
// in their ZeRO stage.
struct CachedPasses {
  int64_t rank = 0;
  PricedActions priced;
};

}  // namespace

struct EstimateCache::State {
  // Priced actions of the layouts seen last, by stage rank: the enumeration runs the
  // recomputation choices inside each ZeRO stage, so a few entries of each table serve them all.
  static constexpr size_t kLayouts = 4;
  struct Entry {
    Layout layout;
    std::vector<CachedPasses> stages;
  };
  using Table = std::vector<Entry>;
  // A stage rank's priced passes, by the layout with zero 0 and without its split, and the part
  // of the split the rank's passes read (passes_split_key): a layout's splits share the stages
  // whose chunks they give the same layers. Enough entries for the latest layouts' stages under
  // each schedule and recomputation (the enumeration's innermost loops) between two splits.
  static constexpr size_t kPasses = 48;
  struct Passes {
    Layout layout;
    int64_t rank = 0;
    std::vector<int> split_key;
    PricedActions priced;
  };
  std::vector<Passes> passes;
  size_t oldest_passes = 0;
  Table data_parallel;  // by the layout without recomputation: its actions do not depend on it
  struct Bound {
    Layout layout;  // with zero 0
    double step_s = 0;
    bool complete = true;  // of every stage; otherwise of those its `enough` needed
  };
  std::vector<Bound> bounds;  // step_time_lower_bound's
  // model_parts_compute's, by what it reads of the layout (rank_shape's fields, ep, recompute):
  // the enumeration's inner loops over ZeRO stages, splits and schedules reuse one.
  struct Parts {
    std::array<int, 6> key{};  // tp, cp, ep, micro_batch, sequence_parallel, recompute
    PartsCompute parts;
  };
  std::vector<Parts> parts;
  CallCosts calls;
  StageStateCache stages;
  // Keys made from the layout being priced: assigned, not copied, so that they reuse their
  // buffers (the split and the rank order) from one layout to the next.
  Layout any_zero, no_recompute, bound_any_zero, bound_without_recompute;
  std::vector<int> split_key;
};

EstimateCache::EstimateCache() : state_(std::make_unique<State>()) {}
EstimateCache::~EstimateCache() = default;
StageStateCache& EstimateCache::stage_states() {
  return state_->stages;
}

namespace {

// The entry of `table` that `matches`, or `make()`'s, which takes the oldest one's place once the
// table holds kLayouts.
template <class T, class Matches, class Make>
T& recent(std::vector<T>& table, Matches matches, Make make) {
  const auto found = std::find_if(table.begin(), table.end(), matches);
  if (found != table.end()) return *found;
  if (table.size() == EstimateCache::State::kLayouts) table.erase(table.begin());
  return table.emplace_back(make());
}

// `price()` for stage rank `rank` under `key`, from `table` when a layout with the same key
// priced it.
template <class Price>
const PricedActions& cached(EstimateCache::State::Table& table, const Layout& key, int64_t rank,
                            Price price) {
  using Entry = EstimateCache::State::Entry;
  Entry& entry = recent(
      table, [&](const Entry& e) { return e.layout == key; },
      [&] {
        return Entry{key, {}};
      });
  for (const CachedPasses& c : entry.stages)
    if (c.rank == rank) return c.priced;
  return entry.stages.emplace_back(CachedPasses{rank, price()}).priced;
}

// Adds one priced half of a stage's folded program to the other.
void add_priced(PricedActions& to, const PricedActions& from) {
  add_compute(to.compute, from.compute, 1);
  for (size_t w = 0; w < kWindows; ++w)
    for (size_t stream = 0; stream < kNumStreams; ++stream)
      for (auto [t, f] :
           {std::pair{&to.per_mb, &from.per_mb}, std::pair{&to.per_step, &from.per_step}}) {
        WindowLoad& load = (*t)[w][stream];
        load.total_s += (*f)[w][stream].total_s;
        load.longest_call_s = std::max(load.longest_call_s, (*f)[w][stream].longest_call_s);
        load.stolen_s += (*f)[w][stream].stolen_s;
      }
  to.fill_drain_s += from.fill_drain_s;
  to.optimizer_s += from.optimizer_s;
  to.optimizer_bytes += from.optimizer_bytes;
  to.records.insert(to.records.end(), from.records.begin(), from.records.end());
}

// The folded program of stage rank `rank` priced, its passes and its data-parallel half each
// from `cache` when a layout it serves priced them.
StageTiming time_stage(const StageContext& ctx, int64_t rank, SpanCache& spans, Priced what,
                       std::vector<CollectiveEstimate>* records, EstimateCache* cache) {
  const auto price = [&](auto fold) {
    PricedActions p;
    price_into(ctx, rank, spans, fold(ctx.m, ctx.t, ctx.l, rank), p);
    return p;
  };
  const auto passes = [&] { return price(fold_passes); };
  const auto data_parallel = [&] { return price(fold_data_parallel); };
  if (!cache) {
    PricedActions p = passes();
    if (what == Priced::program) add_priced(p, data_parallel());
    return finish(ctx, p, records);
  }
  EstimateCache::State& state = cache->state();
  state.any_zero = ctx.l;
  state.any_zero.zero = 0;
  state.any_zero.stages.clear();
  if (state.any_zero.schedule == Schedule::gpipe) state.any_zero.schedule = Schedule::one_f_one_b;
  passes_split_key(ctx.m, ctx.l, rank, state.split_key);
  using Passes = EstimateCache::State::Passes;
  auto found = std::find_if(state.passes.begin(), state.passes.end(), [&](const Passes& e) {
    return e.rank == rank && e.split_key == state.split_key && e.layout == state.any_zero;
  });
  if (found == state.passes.end()) {
    // Each new entry takes the oldest's place.
    if (state.passes.size() < EstimateCache::State::kPasses) {
      found = state.passes.insert(state.passes.end(), Passes{});
    } else {
      found = state.passes.begin() + static_cast<std::ptrdiff_t>(state.oldest_passes);
      state.oldest_passes = (state.oldest_passes + 1) % EstimateCache::State::kPasses;
    }
    found->layout = state.any_zero;
    found->rank = rank;
    found->split_key = state.split_key;
    found->priced = passes();
  }
  const PricedActions& priced_passes = found->priced;
  if (what == Priced::passes) return finish(ctx, priced_passes, records);
  state.no_recompute = ctx.l;
  state.no_recompute.recompute = Recompute::none;
  PricedActions p = priced_passes;
  add_priced(p, cached(state.data_parallel, state.no_recompute, rank, data_parallel));
  return finish(ctx, p, records);
}

const PartsCompute& cached_parts(EstimateCache& cache, const Model& m, const Training& t,
                                 const Layout& l, const DeviceRates& rates,
                                 const ExecutionOptions& x) {
  using Parts = EstimateCache::State::Parts;
  const std::array<int, 6> key{
      l.tp, l.cp, l.ep, l.micro_batch, l.sequence_parallel ? 1 : 0, static_cast<int>(l.recompute)};
  return recent(
             cache.state().parts, [&](const Parts& p) { return p.key == key; },
             [&] {
               return Parts{key, model_parts_compute(m, t, l, rates, x)};
             })
      .parts;
}

void check_dtype(const Cluster& c, Dtype dtype) {
  if (c.device.peak_tflops(dtype) > 0) return;
  const std::string name(enum_name(dtype, kDtypeNames));
  throw InputError(c.name, "device.peak_tflops." + name,
                   "is 0: " + c.device.name + " does not compute in " + name,
                   "train in a dtype the device has a peak for");
}

}  // namespace

StageTimer::StageTimer(const StageContext& ctx, EstimateCache* cache, Priced what)
    : ctx_(ctx),
      cache_(cache),
      what_(what),
      alike_(stages_placed_alike(ctx.c, ctx.l)),
      shared_spans_(ctx, 0) {}

StageTiming StageTimer::operator()(int stage, std::vector<CollectiveEstimate>* records) {
  const int64_t rank = stage_rank(ctx_.l, stage);
  if (alike_) return time_stage(ctx_, rank, shared_spans_, what_, records, cache_);
  SpanCache spans(ctx_, rank);
  return time_stage(ctx_, rank, spans, what_, records, cache_);
}

StageTimings StageTimer::all_stages(const std::function<bool(const StageTimings&)>& enough) {
  const size_t n = static_cast<size_t>(ctx_.l.pp);
  StageTimings out{std::vector<StageTiming>(n), std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), false};
  std::vector<StageLayers> layers;
  layers.reserve(n);
  for (int stage = 0; stage < ctx_.l.pp; ++stage)
    layers.push_back(stage_layers(ctx_.m, ctx_.l, stage));
  std::vector<bool> timed(n, false);
  size_t left = n;
  for (size_t stage = 0; stage < n; ++stage) {
    if (timed[stage]) continue;
    const StageTiming timing = (*this)(static_cast<int>(stage), nullptr);
    for (size_t same = stage; same < n; ++same)
      if (same == stage || (alike_ && !timed[same] && same_layers(layers[same], layers[stage]))) {
        out.stages[same] = timing;
        out.microbatch_s[same] = timing.microbatch_s();
        out.forward_s[same] = timing.compute.forward.time_s();
        out.weight_grad_s[same] = timing.compute.weight_grad.time_s();
        timed[same] = true;
        --left;
      }
    if (left > 0 && enough && enough(out)) return out;
  }
  out.complete = true;
  return out;
}

const StageTiming& most_step_work(const StageTimings& timings) {
  return *std::max_element(timings.stages.begin(), timings.stages.end(),
                           [](const StageTiming& a, const StageTiming& b) {
                             return a.step_extra_s() < b.step_extra_s();
                           });
}

double critical_path_s(const Layout& l, const StageTimings& timings) {
  return pipeline_time_s(l, timings.microbatch_s, timings.split()) +
         most_step_work(timings).step_extra_s();
}

StageContext make_stage_context(const Model& m, const Cluster& c, const Training& t,
                                const Layout& l, const ExecutionOptions& x, EstimateCache* cache) {
  assert(l.world() == c.world());
  check_dtype(c, t.dtype);
  const DeviceRates rates = device_rates(c.device, t.dtype, x.profile);
  CollectiveOptions collectives;
  collectives.profile = x.profile;
  return StageContext{
      m,
      c,
      t,
      l,
      x,
      rates,
      cache ? cached_parts(*cache, m, t, l, rates, x) : model_parts_compute(m, t, l, rates, x),
      collectives,
      cache ? &cache->state().calls : nullptr};
}

// Declared in estimate.h; here, beside the stage pricing and the bounds the cache keeps.
double step_time_lower_bound(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                             const ExecutionOptions& x, EstimateCache* cache,
                             const std::function<bool(double)>& enough) {
  if (enough && l.recompute != Recompute::none) {
    Layout scratch;
    Layout& without = cache ? cache->state().bound_without_recompute : scratch;
    without = l;
    without.recompute = Recompute::none;
    const double bound = step_time_lower_bound(m, c, t, without, x, cache, enough);
    if (enough(bound)) return bound;
  }
  Layout scratch;
  Layout& any_zero = cache ? cache->state().bound_any_zero : scratch;
  any_zero = l;
  any_zero.zero = 0;
  using Bound = EstimateCache::State::Bound;
  std::vector<Bound>* bounds = cache ? &cache->state().bounds : nullptr;
  auto known = bounds ? std::find_if(bounds->begin(), bounds->end(),
                                     [&](const Bound& b) { return b.layout == any_zero; })
                      : std::vector<Bound>::iterator{};
  if (bounds && known != bounds->end() && (known->complete || (enough && enough(known->step_s))))
    return known->step_s;
  const StageContext ctx = make_stage_context(m, c, t, l, x, cache);
  const StageTimings timings =
      StageTimer(ctx, cache, Priced::passes).all_stages([&](const StageTimings& so_far) {
        return enough && enough(critical_path_s(l, so_far));
      });
  const double bound = critical_path_s(l, timings);
  if (!bounds) return bound;
  if (known != bounds->end()) {
    *known = {any_zero, bound, timings.complete};
    return bound;
  }
  if (bounds->size() == EstimateCache::State::kLayouts) bounds->erase(bounds->begin());
  bounds->push_back({any_zero, bound, timings.complete});
  return bound;
}

}  // namespace shardplan
