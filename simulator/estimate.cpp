#include "simulator/estimate.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <optional>

#include "core/error.h"
#include "core/schedule.h"
#include "simulator/device_efficiency.h"
#include "simulator/pipeline_model.h"

namespace shardplan {

namespace {

struct Context {
  const Model& m;
  const Cluster& c;
  const Training& t;
  const Layout& l;
  const ExecutionOptions& x;
  DeviceRates rates;
};

// Where each group of one rank sits, computed on first use (group_span walks the group's ranks).
class SpanCache {
 public:
  SpanCache(const Context& ctx, int64_t rank) : ctx_(ctx), rank_(rank) {}
  const GroupSpan& operator()(Group g) {
    std::optional<GroupSpan>& s = spans_[static_cast<size_t>(g)];
    if (!s) s = group_span(ctx_.c, ctx_.l, rank_, g);
    return *s;
  }

 private:
  const Context& ctx_;
  int64_t rank_;
  std::array<std::optional<GroupSpan>, kGroupNames.size()> spans_{};
};

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

// One stage's time per micro-batch and per step.
struct StageTiming {
  MicrobatchCompute compute;
  double microbatch_comm_s = 0;  // exposed, per micro-batch
  double step_comm_s = 0;        // exposed, per step
  double optimizer_s = 0;
  double optimizer_bytes = 0;

  double microbatch_s() const { return compute.time_s() + microbatch_comm_s; }
  double step_extra_s() const { return step_comm_s + optimizer_s; }
};

// A call's group, narrowed to the members taking part when it is a subset of a placement group.
GroupSpan call_span(SpanCache& spans, const CollectiveCall& call) {
  GroupSpan span = spans(call.group);
  if (call.group_size > 0 && call.group_size < span.size) {
    span.size = call.group_size;
    span.nodes = std::min(span.nodes, call.group_size);
    span.max_ranks_per_node =
        std::min(span.max_ranks_per_node, (call.group_size + span.nodes - 1) / span.nodes);
  }
  return span;
}

// Communication time that one kind of window leaves on the critical path.
struct WindowLoad {
  double total_s = 0;
  double longest_call_s = 0;
};

double exposed_s(CommWindow w, const WindowLoad& load, const MicrobatchCompute& mc,
                 bool interleaved, StreamExecution streams) {
  if (load.total_s == 0) return 0;
  // One thread running every action in turn hides nothing.
  if (streams == StreamExecution::program_order) return load.total_s;
  switch (w) {
    case CommWindow::none:
      return load.total_s;
    case CommWindow::attention: {
      const double attention = mc.forward[OpKind::attention].time_s +
                               mc.backward[OpKind::attention].time_s +
                               mc.recompute[OpKind::attention].time_s;
      return std::max(0.0, load.total_s - attention);
    }
    // A prefetch cannot hide the first gather, nor overlapped reductions the last bucket.
    case CommWindow::forward:
      return std::max(load.longest_call_s, load.total_s - mc.forward.time_s());
    case CommWindow::backward:
      return std::max(load.longest_call_s,
                      load.total_s - mc.backward.time_s() - mc.recompute.time_s());
    case CommWindow::pipeline:
      // Megatron-LM's 1F1B and GPipe schedules wait for each send/recv; the interleaved schedule
      // overlaps them with the next chunk's compute (--overlap-p2p-communication) and only the
      // fill and drain pay (added per step in time_stage).
      return interleaved ? 0 : load.total_s;
  }
  return load.total_s;
}

constexpr size_t kWindows = kCommWindowNames.size();

// `spans` holds the groups of one rank of stage s (or of any stage when all are placed alike).
StageTiming time_stage(const Context& ctx, const StageLayers& s, SpanCache& spans,
                       std::vector<CollectiveCall>& calls,
                       std::vector<CollectiveEstimate>* records) {
  const Model& m = ctx.m;
  const Layout& l = ctx.l;
  StageTiming st;
  st.compute = microbatch_compute(m, ctx.t, l, s, ctx.rates, ctx.x);

  const ParamShard p = param_shard(m, l, s);
  const int64_t updated = l.zero >= 1 ? shard_size(p.dense(), dense_replicas(l)) +
                                            shard_size(p.experts, expert_replicas(l))
                                      : p.total();
  st.optimizer_bytes = optimizer_step_bytes(ctx.t, updated);
  st.optimizer_s = optimizer_step_time_s(ctx.rates, ctx.t, updated);

  stage_collectives(m, ctx.t, l, s, calls);
  const bool interleaved = l.schedule == Schedule::interleaved;
  std::array<WindowLoad, kWindows> per_mb{}, per_step{};
  double fill_drain_s = 0;  // interleaved pipeline: p2p of the fill and drain
  if (records) records->clear();
  CollectiveOptions priced;
  priced.profile = ctx.x.profile;
  for (const CollectiveCall& call : calls) {
    const GroupSpan span = call_span(spans, call);
    priced.cold_input = call.cold_input;
    const CollectiveCost cost = collective_cost(ctx.c, call.collective, call.bytes, span, priced);
    // A call's time: the collective's, and a ZeRO reduce-scatter's own memory traffic after it.
    const double local_s =
        memory_time_s(ctx.rates, static_cast<double>(zero_reduce_scatter_local_bytes(
                                     call.bytes, call.zero_grad_params, l.zero, span.size)));
    const double call_s = cost.time_s + local_s;
    const bool mb = call.frequency == CommFrequency::per_microbatch;
    WindowLoad& load = (mb ? per_mb : per_step)[static_cast<size_t>(call.window)];
    load.total_s += static_cast<double>(call.calls) * call_s;
    load.longest_call_s = std::max(load.longest_call_s, call_s);
    if (call.window == CommWindow::pipeline && interleaved)
      fill_drain_s += 2.0 * (l.pp - 1) * call_s;
    if (records) {
      const int64_t per_step_calls = mb ? call.calls * l.num_microbatches : call.calls;
      records->push_back({call, span, ctx.c.levels[span.level].name, cost, local_s, per_step_calls,
                          volume_bytes(call, span.size, per_step_calls),
                          static_cast<double>(per_step_calls) * call_s, 0});
    }
  }
  std::array<double, kWindows> exposed_mb{}, exposed_step{};
  for (size_t w = 0; w < kWindows; ++w) {
    exposed_mb[w] =
        exposed_s(static_cast<CommWindow>(w), per_mb[w], st.compute, interleaved, ctx.x.streams);
    exposed_step[w] =
        exposed_s(static_cast<CommWindow>(w), per_step[w], st.compute, interleaved, ctx.x.streams);
    st.microbatch_comm_s += exposed_mb[w];
    st.step_comm_s += exposed_step[w];
  }
  st.step_comm_s += fill_drain_s;
  if (records) {
    // Each window's exposed time, shared among its collectives by their share of its load.
    for (CollectiveEstimate& r : *records) {
      const size_t w = static_cast<size_t>(r.call.window);
      const bool mb = r.call.frequency == CommFrequency::per_microbatch;
      const WindowLoad& load = (mb ? per_mb : per_step)[w];
      const double per_call_total = static_cast<double>(r.call.calls) * (r.cost.time_s + r.local_s);
      if (load.total_s > 0)
        r.exposed_s = (mb ? exposed_mb[w] * l.num_microbatches : exposed_step[w]) * per_call_total /
                      load.total_s;
      if (r.call.window == CommWindow::pipeline && interleaved)
        r.exposed_s += 2.0 * (l.pp - 1) * r.cost.time_s;  // send_recv: no local work
    }
  }
  return st;
}

// Times every stage and sizes its memory. Stages with the same layers, placed alike, take the same
// time: only the first of them is timed. Returns each stage's timing.
class StageTimer {
 public:
  explicit StageTimer(const Context& ctx)
      : ctx_(ctx), alike_(stages_placed_alike(ctx.c, ctx.l)), shared_spans_(ctx, 0) {
    calls_.reserve(16);
  }

  StageTiming operator()(const StageLayers& s, std::vector<CollectiveEstimate>* records) {
    if (alike_) return time_stage(ctx_, s, shared_spans_, calls_, records);
    SpanCache spans(ctx_, stage_rank(ctx_.l, s.stage));
    return time_stage(ctx_, s, spans, calls_, records);
  }

  std::vector<StageTiming> all_stages(Estimate& e) {
    const Layout& l = ctx_.l;
    std::vector<StageTiming> timings;
    std::vector<StageLayers> layers;
    timings.reserve(static_cast<size_t>(l.pp));
    layers.reserve(static_cast<size_t>(l.pp));
    e.stages.reserve(static_cast<size_t>(l.pp));
    e.stage_microbatch_s.reserve(static_cast<size_t>(l.pp));
    for (int stage = 0; stage < l.pp; ++stage) {
      const StageLayers s = stage_layers(ctx_.m, l, stage);
      e.stages.push_back(rank_memory(ctx_.m, ctx_.t, l, s, ctx_.c.device, ctx_.x));
      const auto same = alike_
                            ? std::find_if(layers.begin(), layers.end(),
                                           [&](const StageLayers& o) { return same_layers(o, s); })
                            : layers.end();
      timings.push_back(same != layers.end() ? timings[static_cast<size_t>(same - layers.begin())]
                                             : (*this)(s, nullptr));
      layers.push_back(s);
      e.stage_microbatch_s.push_back(timings.back().microbatch_s());
    }
    return timings;
  }

  static int64_t stage_rank(const Layout& l, int stage) {
    return rank_of(l, RankCoord{0, 0, 0, 0, stage});
  }

 private:
  const Context& ctx_;
  bool alike_;
  SpanCache shared_spans_;
  std::vector<CollectiveCall> calls_;
};

void check_dtype(const Cluster& c, Dtype dtype) {
  if (c.device.peak_tflops(dtype) > 0) return;
  const std::string name(enum_name(dtype, kDtypeNames));
  throw InputError(c.name, "device.peak_tflops." + name,
                   "is 0: " + c.device.name + " does not compute in " + name,
                   "train in a dtype the device has a peak for");
}

// The worst rank's memory: every stage has the same capacity and reserve, so the one with the
// largest peak decides whether the layout fits.
void pick_worst_memory(Estimate& e, const Layout& l) {
  for (size_t i = 0; i < e.stages.size(); ++i)
    if (e.stages[i].peak_bytes() > e.memory().peak_bytes()) e.worst_stage = static_cast<int>(i);
  e.worst_rank = StageTimer::stage_rank(l, e.worst_stage);
  e.fits = e.memory().fits();
  if (!e.fits) e.overflow = first_overflow(e.memory());
}

// Step time on the critical path: the pipeline over the slowest stage, then the per-step work of
// the stage that has the most of it (every stage waits for it at the optimizer step).
void fill_step_time(Estimate& e, const Layout& l, const StageTiming& slow,
                    const std::vector<StageTiming>& timings) {
  const StageTiming& extra = *std::max_element(timings.begin(), timings.end(),
                                               [](const StageTiming& a, const StageTiming& b) {
                                                 return a.step_extra_s() < b.step_extra_s();
                                               });
  const double pipeline_s = pipeline_time_s(l, e.stage_microbatch_s);
  const double mb = l.num_microbatches;
  e.time.compute_s = mb * (slow.compute.forward.time_s() + slow.compute.backward.time_s());
  e.time.recompute_s = mb * slow.compute.recompute.time_s();
  e.time.microbatch_comm_s = mb * slow.microbatch_comm_s;
  e.time.bubble_s = pipeline_s - mb * slow.microbatch_s();
  e.time.step_comm_s = extra.step_comm_s;
  e.time.optimizer_s = extra.optimizer_s;
  e.step_time_s = pipeline_s + extra.step_extra_s();
  e.bubble_fraction = bubble_fraction(l, e.stage_microbatch_s);
  for (const CollectiveEstimate& r : e.collectives) e.exposed_comm_s += r.exposed_s;
}

void fill_rates(Estimate& e, const Model& m, const Training& t, const Layout& l) {
  const int64_t global_batch = l.global_batch();
  e.model_flops_per_step = model_flops_per_step(m, global_batch, t.seq_len);
  e.hardware_flops_per_step =
      e.model_flops_per_step + recompute_flops_per_step(m, global_batch, t.seq_len, l.recompute);
  const double world = static_cast<double>(e.world);
  e.tokens_per_s = static_cast<double>(e.tokens_per_step) / e.step_time_s;
  e.tflops_per_device = e.model_flops_per_step / e.step_time_s / world / 1e12;
  e.mfu = e.model_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  e.hfu = e.hardware_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  if (t.tokens_to_train > 0) {
    e.train_time_s = t.tokens_to_train / e.tokens_per_s;
    e.train_cost = e.train_time_s / 3600 * world * t.price_per_device_hour;
  }
}

}  // namespace

Estimate estimate(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x) {
  assert(l.world() == c.world());
  check_dtype(c, t.dtype);
  const Context ctx{m, c, t, l, x, device_rates(c.device, t.dtype, x.profile)};
  Estimate e;
  e.world = l.world();
  e.tokens_per_step = l.global_batch() * t.seq_len;
  e.peak_flops_per_device = c.device.peak_tflops(t.dtype) * 1e12;
  e.options = x;

  StageTimer timer(ctx);
  const std::vector<StageTiming> timings = timer.all_stages(e);
  pick_worst_memory(e, l);
  const auto slowest = std::max_element(e.stage_microbatch_s.begin(), e.stage_microbatch_s.end());
  e.slowest_stage = static_cast<int>(slowest - e.stage_microbatch_s.begin());
  const StageTiming slow = timer(stage_layers(m, l, e.slowest_stage), &e.collectives);
  e.compute = slow.compute;
  e.optimizer_bytes = slow.optimizer_bytes;
  fill_step_time(e, l, slow, timings);
  fill_rates(e, m, t, l);
  return e;
}

}  // namespace shardplan
