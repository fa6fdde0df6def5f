#include "simulator/estimate.h"

#include <algorithm>
#include <array>
#include <cassert>

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
GroupSpan call_span(const Context& ctx, int64_t rank, const CollectiveCall& call) {
  GroupSpan span = group_span(ctx.c, ctx.l, rank, call.group);
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

double exposed_s(CommWindow w, const WindowLoad& load, const MicrobatchCompute& mc, bool interleaved) {
  if (load.total_s == 0) return 0;
  switch (w) {
    case CommWindow::none:
      return load.total_s;
    case CommWindow::attention: {
      const double attention = mc.forward[OpKind::attention].time_s + mc.backward[OpKind::attention].time_s +
                               mc.recompute[OpKind::attention].time_s;
      return std::max(0.0, load.total_s - attention);
    }
    // A prefetch cannot hide the first gather, nor overlapped reductions the last bucket.
    case CommWindow::forward:
      return std::max(load.longest_call_s, load.total_s - mc.forward.time_s());
    case CommWindow::backward:
      return std::max(load.longest_call_s, load.total_s - mc.backward.time_s() - mc.recompute.time_s());
    case CommWindow::pipeline:
      // Megatron-LM's 1F1B and GPipe schedules wait for each send/recv; the interleaved schedule
      // overlaps them with the next chunk's compute (--overlap-p2p-communication) and only the
      // fill and drain pay (added per step in time_stage).
      return interleaved ? 0 : load.total_s;
  }
  return load.total_s;
}

constexpr size_t kWindows = kCommWindowNames.size();

StageTiming time_stage(const Context& ctx, const StageLayers& s, std::vector<CollectiveCall>& calls,
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
  st.optimizer_s = memory_time_s(ctx.rates, st.optimizer_bytes);

  stage_collectives(m, ctx.t, l, s, calls);
  const int64_t rank = rank_of(l, RankCoord{0, 0, 0, 0, s.stage});
  const bool interleaved = l.schedule == Schedule::interleaved;
  std::array<WindowLoad, kWindows> per_mb{}, per_step{};
  double fill_drain_s = 0;  // interleaved pipeline: p2p of the fill and drain
  if (records) records->clear();
  for (const CollectiveCall& call : calls) {
    const GroupSpan span = call_span(ctx, rank, call);
    const CollectiveCost cost = collective_cost(ctx.c, call.collective, call.bytes, span);
    const bool mb = call.frequency == CommFrequency::per_microbatch;
    WindowLoad& load = (mb ? per_mb : per_step)[static_cast<size_t>(call.window)];
    load.total_s += static_cast<double>(call.calls) * cost.time_s;
    load.longest_call_s = std::max(load.longest_call_s, cost.time_s);
    if (call.window == CommWindow::pipeline && interleaved) fill_drain_s += 2.0 * (l.pp - 1) * cost.time_s;
    if (records) {
      const int64_t per_step_calls = mb ? call.calls * l.num_microbatches : call.calls;
      records->push_back({call, span, ctx.c.levels[span.level].name, cost, per_step_calls, volume_bytes(call, span.size, per_step_calls),
                          static_cast<double>(per_step_calls) * cost.time_s, 0});
    }
  }
  std::array<double, kWindows> exposed_mb{}, exposed_step{};
  for (size_t w = 0; w < kWindows; ++w) {
    exposed_mb[w] = exposed_s(static_cast<CommWindow>(w), per_mb[w], st.compute, interleaved);
    exposed_step[w] = exposed_s(static_cast<CommWindow>(w), per_step[w], st.compute, interleaved);
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
      const double per_call_total = static_cast<double>(r.call.calls) * r.cost.time_s;
      if (load.total_s > 0)
        r.exposed_s = (mb ? exposed_mb[w] * l.num_microbatches : exposed_step[w]) * per_call_total / load.total_s;
      if (r.call.window == CommWindow::pipeline && interleaved) r.exposed_s += 2.0 * (l.pp - 1) * r.cost.time_s;
    }
  }
  return st;
}

}  // namespace

Estimate estimate(const Model& m, const Cluster& c, const Training& t, const Layout& l,
                  const ExecutionOptions& x) {
  assert(l.world() == c.world());
  const Context ctx{m, c, t, l, x, device_rates(c.device, t.dtype)};
  Estimate e;
  e.world = l.world();
  e.tokens_per_step = l.global_batch() * t.seq_len;
  e.peak_flops_per_device = c.device.peak_tflops(t.dtype) * 1e12;
  e.options = x;

  std::vector<CollectiveCall> calls;
  calls.reserve(16);
  e.stages.reserve(static_cast<size_t>(l.pp));
  e.stage_microbatch_s.reserve(static_cast<size_t>(l.pp));
  int extra_stage = 0;
  double extra_s = -1;
  std::vector<StageTiming> timings;
  timings.reserve(static_cast<size_t>(l.pp));
  for (int stage = 0; stage < l.pp; ++stage) {
    const StageLayers s = stage_layers(m, l, stage);
    e.stages.push_back(rank_memory(m, t, l, s, c.device, x));
    timings.push_back(time_stage(ctx, s, calls, nullptr));
    e.stage_microbatch_s.push_back(timings.back().microbatch_s());
    if (timings.back().step_extra_s() > extra_s) extra_s = timings.back().step_extra_s(), extra_stage = stage;
    if (e.stages.back().peak_bytes() > e.memory().peak_bytes()) e.worst_stage = stage;
  }
  e.worst_rank = rank_of(l, RankCoord{0, 0, 0, 0, e.worst_stage});
  e.fits = std::all_of(e.stages.begin(), e.stages.end(), [](const RankMemory& r) { return r.fits(); });
  if (!e.memory().fits()) e.overflow = first_overflow(e.memory());

  const auto slowest = std::max_element(e.stage_microbatch_s.begin(), e.stage_microbatch_s.end());
  e.slowest_stage = static_cast<int>(slowest - e.stage_microbatch_s.begin());
  const StageTiming slow = time_stage(ctx, stage_layers(m, l, e.slowest_stage), calls, &e.collectives);
  e.compute = slow.compute;
  e.optimizer_bytes = slow.optimizer_bytes;

  const double pipeline_s = pipeline_time_s(l, e.stage_microbatch_s);
  const StageTiming& extra = timings[static_cast<size_t>(extra_stage)];
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

  const int64_t global_batch = l.global_batch();
  e.model_flops_per_step = model_flops_per_step(m, global_batch, t.seq_len);
  e.hardware_flops_per_step = e.model_flops_per_step + recompute_flops_per_step(m, global_batch, t.seq_len, l.recompute);
  const double world = static_cast<double>(e.world);
  e.tokens_per_s = static_cast<double>(e.tokens_per_step) / e.step_time_s;
  e.tflops_per_device = e.model_flops_per_step / e.step_time_s / world / 1e12;
  e.mfu = e.model_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  e.hfu = e.hardware_flops_per_step / (e.step_time_s * world * e.peak_flops_per_device);
  if (t.tokens_to_train > 0) {
    e.train_time_s = t.tokens_to_train / e.tokens_per_s;
    e.train_cost = e.train_time_s / 3600 * world * t.price_per_device_hour;
  }
  return e;
}

}  // namespace shardplan
