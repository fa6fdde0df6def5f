#include "simulator/stage_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <memory>

#include "core/error.h"
#include "core/schedule.h"
#include "core/schedule_fold.h"
#include "simulator/action_cost.h"
#include "simulator/fp8_linears.h"
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

// Under v_placement rank pp − 1 hands its chunks' activations and gradients over locally: it sends
// and receives half as many pipeline messages as a rank with the same layers elsewhere.
bool turns_locally(const Layout& l, size_t stage) {
  return v_placement(l.schedule) && stage + 1 == static_cast<size_t>(l.pp);
}

bool same_layers(const StageLayers& a, const StageLayers& b) {
  return a.dense_layers == b.dense_layers && a.moe_layers == b.moe_layers && a.first == b.first &&
         a.last == b.last;
}

// The passes of one stage's program priced, kept for the layouts that differ from this one only
// in their ZeRO stage.
struct CachedPasses {
  int64_t rank = 0;
  PricedActions priced;
};

// The latest entries of one of an EstimateCache's tables, up to `Capacity`: a new one takes the
// oldest's place. The planner's inner loops meet the same keys again within a few layouts.
template <class T, size_t Capacity>
class Recent {
 public:
  template <class Matches>
  T* find(Matches matches) {
    const auto found = std::find_if(entries_.begin(), entries_.end(), matches);
    return found == entries_.end() ? nullptr : &*found;
  }
  T& add(T entry) {
    if (entries_.size() < Capacity) return entries_.emplace_back(std::move(entry));
    T& oldest = entries_[oldest_];
    oldest_ = (oldest_ + 1) % Capacity;
    return oldest = std::move(entry);
  }
  template <class Matches, class Make>
  T& find_or_add(Matches matches, Make make) {
    if (T* found = find(matches)) return *found;
    return add(make());
  }

 private:
  std::vector<T> entries_;
  size_t oldest_ = 0;
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
  // A stage rank's priced passes, by the layout with zero 0 and without its split, and the part
  // of the split the rank's passes read (passes_split_key): a layout's splits share the stages
  // whose chunks they give the same layers. Enough entries for the latest layouts' stages under
  // each schedule and recomputation (the enumeration's innermost loops) between two splits.
  static constexpr size_t kPasses = 48;
  struct Passes {
    Layout layout;
    size_t layout_hash = 0;  // compared first: a lookup passes over dozens of entries
    int64_t rank = 0;
    std::vector<int> split_key;
    PricedActions priced;
  };
  Recent<Passes, kPasses> passes;
  // By the layout without recomputation: its actions do not depend on it.
  Recent<Entry, kLayouts> data_parallel;
  struct Bound {
    Layout layout;  // with zero 0 (2 or 3 where the passes differ: passes_zero)
    double step_s = 0;
    bool complete = true;  // of every stage; otherwise of those its `enough` needed
  };
  Recent<Bound, kLayouts> bounds;  // step_time_lower_bound's
  // model_parts_compute's, by what it reads of the layout (rank_shape's fields, ep, recompute, what
  // the gradients' accumulation reads):
  // the enumeration's inner loops over ZeRO stages, splits and schedules reuse one.
  struct Parts {
    // tp, cp, ep, micro_batch, sequence_parallel, recompute, grad_accumulation_reads' shard
    // ranks, parts_microbatches, fp8_weights_cached
    std::array<int, 9> key{};
    std::shared_ptr<const PartsCompute> parts;
  };
  Recent<Parts, kLayouts> parts;
  CallCosts calls;
  StageStateCache stages;
  // The bound's keys, made from the layout being priced: assigned, not copied, so that they
  // reuse their buffers (the split and the rank order) from one layout to the next.
  Layout bound_any_zero, bound_without_recompute;
  std::vector<int> split_key;
};

EstimateCache::EstimateCache() : state_(std::make_unique<State>()) {}
EstimateCache::~EstimateCache() = default;
StageStateCache& EstimateCache::stage_states() {
  return state_->stages;
}

namespace {

// `price()` for stage rank `rank` under `key`, from `table` when a layout with the same key
// priced it.
template <class Price>
const PricedActions& cached(
    Recent<EstimateCache::State::Entry, EstimateCache::State::kLayouts>& table, const Layout& key,
    int64_t rank, Price price) {
  using Entry = EstimateCache::State::Entry;
  Entry& entry = table.find_or_add([&](const Entry& e) { return e.layout == key; },
                                   [&] {
                                     return Entry{key, {}};
                                   });
  for (const CachedPasses& c : entry.stages)
    if (c.rank == rank) return c.priced;
  return entry.stages.emplace_back(CachedPasses{rank, price()}).priced;
}

// The ZeRO stage a layout's passes are priced alike under: 0 for all, 2 for ZeRO-2 and -3 where
// the gradients' accumulation adds only the rank's shard (grad_accumulation_reads), 3 for ZeRO-3
// where it casts FP8 weights that lower stages keep (fp8_weights_cached).
int passes_zero(const Training& t, const Layout& l, const ExecutionOptions& x) {
  // ZeRO-3 quantizes FP8 weights every micro-batch where the framework would cache them.
  if (l.zero >= 3 && t.fp8 != Fp8Recipe::none && x.fp8_weight_cache) return 3;
  return grad_accumulation_reads(x.grad_accumulation, t, l).shard_ranks > 0 ? 2 : 0;
}

StageCacheKeys stage_cache_keys(const Training& t, const Layout& l, const ExecutionOptions& x,
                                Priced what) {
  StageCacheKeys k;
  k.passes = l;
  k.passes.zero = passes_zero(t, l, x);
  k.passes.stages.clear();
  if (k.passes.schedule == Schedule::gpipe) k.passes.schedule = Schedule::one_f_one_b;
  k.passes_hash = hash_value(k.passes);
  if (what == Priced::program) {
    k.data_parallel = l;
    k.data_parallel.recompute = Recompute::none;
  }
  return k;
}

// The folded program of stage rank `rank` priced, its passes and its data-parallel half each
// from `cache` (under `keys`) when a layout it serves priced them.
StageTiming time_stage(const StageContext& ctx, int64_t rank, SpanCache& spans, Priced what,
                       std::vector<CollectiveEstimate>* records, EstimateCache* cache,
                       const StageCacheKeys* keys) {
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
    return stage_timing(ctx, p, records);
  }
  EstimateCache::State& state = cache->state();
  passes_split_key(ctx.m, ctx.l, rank, state.split_key);
  using Passes = EstimateCache::State::Passes;
  const PricedActions& priced_passes =
      state.passes
          .find_or_add(
              [&](const Passes& e) {
                return e.layout_hash == keys->passes_hash && e.rank == rank &&
                       e.split_key == state.split_key && e.layout == keys->passes;
              },
              [&] {
                return Passes{keys->passes, keys->passes_hash, rank, state.split_key, passes()};
              })
          .priced;
  if (what == Priced::passes) return stage_timing(ctx, priced_passes, records);
  PricedActions p = priced_passes;
  add_priced(p, cached(state.data_parallel, keys->data_parallel, rank, data_parallel));
  return stage_timing(ctx, p, records);
}

std::shared_ptr<const PartsCompute> parts_compute(const Model& m, const Training& t,
                                                  const Layout& l, const DeviceRates& rates,
                                                  const ExecutionOptions& x) {
  return std::make_shared<const PartsCompute>(model_parts_compute(m, t, l, rates, x));
}

const std::shared_ptr<const PartsCompute>& cached_parts(EstimateCache& cache, const Model& m,
                                                        const Training& t, const Layout& l,
                                                        const DeviceRates& rates,
                                                        const ExecutionOptions& x) {
  using Parts = EstimateCache::State::Parts;
  const GradAccumulationReads accumulation = grad_accumulation_reads(x.grad_accumulation, t, l);
  const std::array<int, 9> key{l.tp,
                               l.cp,
                               l.ep,
                               l.micro_batch,
                               l.sequence_parallel ? 1 : 0,
                               static_cast<int>(l.recompute),
                               accumulation.shard_ranks,
                               parts_microbatches(t, l, x),
                               fp8_weights_cached(t, l, x) ? 1 : 0};
  return cache.state()
      .parts
      .find_or_add([&](const Parts& p) { return p.key == key; },
                   [&] {
                     return Parts{key, parts_compute(m, t, l, rates, x)};
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

// FP8 linears need the device's FP8 tensor cores, MXFP8 Blackwell's, and the datasheet's rates.
void check_fp8(const Cluster& c, const Training& t, const ExecutionOptions& x) {
  if (t.fp8 == Fp8Recipe::none) return;
  const std::string recipe(enum_name(t.fp8, kFp8RecipeNames));
  check_fp8_dtype(t, "training", "training.fp8");
  if (!(c.device.peak_tflops_fp8 > 0))
    throw InputError(
        c.name, "device.peak_tflops.fp8",
        "is 0: " + c.device.name + " has no FP8 tensor cores, and training.fp8 is " + recipe,
        "train with fp8 none (16-bit GEMMs), or on a device with FP8 (Hopper or "
        "later)");
  if (t.fp8 == Fp8Recipe::mxfp8 && c.device.arch != GpuArch::blackwell)
    throw InputError(c.name, "device.arch",
                     fmt::format("is {}: MXFP8's block scaling runs on Blackwell's tensor cores "
                                 "only, and training.fp8 is mxfp8",
                                 enum_name(c.device.arch, kGpuArchNames)),
                     "use fp8 delayed or current (per-tensor scales) before Blackwell");
  if (x.profile)
    throw InputError("--profile", "training.fp8",
                     "is " + recipe + ", and a calibration profile measures 16-bit GEMMs only",
                     "price FP8 from the datasheet (no --profile), or train with fp8 none");
}

}  // namespace

StageTimer::StageTimer(const StageContext& ctx, EstimateCache* cache, Priced what)
    : ctx_(ctx),
      cache_(cache),
      what_(what),
      alike_(stages_placed_alike(ctx.c, ctx.l)),
      shared_spans_(ctx, 0) {
  if (cache) keys_ = stage_cache_keys(ctx.t, ctx.l, ctx.x, what);
}

StageTiming StageTimer::operator()(int stage, std::vector<CollectiveEstimate>* records) {
  const int64_t rank = stage_rank(ctx_.l, stage);
  const StageCacheKeys* keys = keys_ ? &*keys_ : nullptr;
  if (alike_) return time_stage(ctx_, rank, shared_spans_, what_, records, cache_, keys);
  SpanCache spans(ctx_, rank);
  return time_stage(ctx_, rank, spans, what_, records, cache_, keys);
}

StageTimings StageTimer::all_stages(const std::function<bool(const StageTimings&)>& enough) {
  const size_t n = static_cast<size_t>(ctx_.l.pp);
  StageTimings out{{},
                   std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0),
                   false};
  const std::vector<StageLayers> layers = every_stage_layers(ctx_.m, ctx_.l);
  std::vector<bool> timed(n, false);
  size_t left = n;
  for (size_t stage = 0; stage < n; ++stage) {
    if (timed[stage]) continue;
    const StageTiming timing = (*this)(static_cast<int>(stage), nullptr);
    // Stages are timed first to last, so the first with the most is kept.
    if (stage == 0 || timing.step_extra_s() > out.most_step_work.step_extra_s())
      out.most_step_work = timing;
    for (size_t same = stage; same < n; ++same)
      if (same == stage || (alike_ && !timed[same] && same_layers(layers[same], layers[stage]) &&
                            turns_locally(ctx_.l, same) == turns_locally(ctx_.l, stage))) {
        out.microbatch_s[same] = timing.microbatch_s();
        out.forward_s[same] = timing.compute.forward.time_s();
        // Selective recomputation runs inside the backward (B).
        out.backward_s[same] = timing.compute.backward.time_s() + timing.compute.recompute.time_s();
        out.weight_grad_s[same] = timing.compute.weight_grad.time_s();
        timed[same] = true;
        --left;
      }
    if (left > 0 && enough && enough(out)) return out;
  }
  out.complete = true;
  return out;
}

double critical_path_s(const Layout& l, const StageTimings& timings) {
  return pipeline_time_s(l, timings.microbatch_s, timings.split()) +
         timings.most_step_work.step_extra_s();
}

namespace {

// critical_path_s, or below it: ZB-V's order is walked (pipeline_model.h) in O(pp·m), so while
// stages are still untimed (their time 0) its bound is the slowest rank's m micro-batches (each
// rank runs all of their passes).
double critical_path_bound_s(const Layout& l, const StageTimings& timings) {
  if (timings.complete || !v_placement(l.schedule)) return critical_path_s(l, timings);
  return l.num_microbatches *
             *std::max_element(timings.microbatch_s.begin(), timings.microbatch_s.end()) +
         timings.most_step_work.step_extra_s();
}

}  // namespace

StageContext make_stage_context(const Model& m, const Cluster& c, const Training& t,
                                const Layout& l, const ExecutionOptions& x, EstimateCache* cache) {
  assert(l.world() == c.world());
  check_dtype(c, t.dtype);
  check_fp8(c, t, x);
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
      cache ? cached_parts(*cache, m, t, l, rates, x) : parts_compute(m, t, l, rates, x),
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
  any_zero.zero = passes_zero(t, l, x);
  using Bound = EstimateCache::State::Bound;
  Bound* known =
      cache ? cache->state().bounds.find([&](const Bound& b) { return b.layout == any_zero; })
            : nullptr;
  if (known && (known->complete || (enough && enough(known->step_s)))) return known->step_s;
  const StageContext ctx = make_stage_context(m, c, t, l, x, cache);
  const StageTimings timings =
      StageTimer(ctx, cache, Priced::passes).all_stages([&](const StageTimings& so_far) {
        return enough && enough(critical_path_bound_s(l, so_far));
      });
  const double bound = critical_path_bound_s(l, timings);
  if (known)
    *known = {any_zero, bound, timings.complete};
  else if (cache)
    cache->state().bounds.add({any_zero, bound, timings.complete});
  return bound;
}

}  // namespace shardplan
