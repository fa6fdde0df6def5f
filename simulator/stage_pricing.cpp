#include "simulator/stage_pricing.h"

#include <algorithm>

#include "simulator/action_cost.h"
#include "simulator/interference.h"
#include "simulator/tp_comm_overlap.h"

namespace shardplan {

namespace {

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

// One communication action's span and cost per call.
struct PricedComm {
  GroupSpan span;
  GroupActionCost cost;  // a send's has no local work
  double interference_share = 0;
};

GroupSpan comm_span(const StageContext& ctx, const Action& a, int64_t rank, SpanCache& spans) {
  if (a.kind == ActionKind::send) return pipeline_pair_span(ctx.c, ctx.l, rank, a.peer);
  if (a.kind == ActionKind::grad_reduce && a.group == Group::pp) {
    RankCoord first = rank_coord(ctx.l, rank), last = first;
    first.pp = 0;
    last.pp = last_stage_rank(ctx.l);
    return pipeline_pair_span(ctx.c, ctx.l, rank_of(ctx.l, first), rank_of(ctx.l, last));
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
  // Overlapped with its GEMMs it costs what they leave exposed, their loss to its SMs included.
  if (tp_overlapped(ctx.t, a, p.span)) {
    p.cost.collective.time_s = tp_overlapped_s(a, p.cost.collective.time_s, *ctx.parts, ctx.l,
                                               ctx.c.device.efficiency.sm_count);
    return p;
  }
  // The share follows the action's stream, which the call's price leaves out.
  if (a.kind != ActionKind::send)
    p.interference_share = interference_share(ctx.c, a, p.span, p.cost.collective);
  return p;
}

}  // namespace

void price_into(const StageContext& ctx, int64_t rank, SpanCache& spans,
                const std::vector<FoldedAction>& folded, PricedActions& p) {
  const Layout& l = ctx.l;
  for (const FoldedAction& f : folded) {
    const Action& a = f.action;
    if (a.kind == ActionKind::compute) {
      add_compute(p.compute, compute_action_cost(*ctx.parts, a, l.recompute),
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

StageTiming stage_timing(const StageContext& ctx, const PricedActions& p,
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
    // Its load in the window (per micro-batch or per step): its calls' times, which differ where
    // one line holds the forward's and the backward's calls (tp_comm_overlap.h prices them apart).
    const double window_total = mb ? r.total_s / l.num_microbatches : r.total_s;
    if (load_s > 0)
      r.exposed_s =
          (mb ? exposed_mb[w] * l.num_microbatches : exposed_step[w]) * window_total / load_s;
    if (r.window == CommWindow::pipeline && overlapped_p2p)
      r.exposed_s += (l.pp - 1) * r.cost.time_s;
  }
  return st;
}

}  // namespace shardplan
