// Prices a schedule's actions with the cost model: tables of compute time by pass and part set
// built once from compute_model, spans of every program's groups computed once, and
// collective_cost (pure arithmetic) per communication.
#include "simulator/cost_model_pricer.h"

#include <cassert>

#include "simulator/activation_memory.h"
#include "simulator/collective_cost.h"
#include "simulator/compute_model.h"
#include "simulator/parts_compute.h"
#include "simulator/rank_shape.h"

namespace shardplan {

namespace {

constexpr size_t kEmbeddingPair = kGroupNames.size();  // group code of a tied-embedding reduction

size_t pass_index(Pass p) {
  assert(p == Pass::forward || p == Pass::backward || p == Pass::recompute);
  return p == Pass::forward ? 0 : p == Pass::backward ? 1 : 2;
}

// One part's time in each pass as its compute action runs it: the backward carries selective
// recomputation's re-forward, which has no action of its own; full recomputation's has.
std::array<double, 3> part_pass_s(const MicrobatchCompute& c, Recompute r) {
  const double inside_backward = r == Recompute::full ? 0 : c.recompute.time_s();
  return {c.forward.time_s(), c.backward.time_s() + inside_backward, c.recompute.time_s()};
}

}  // namespace

CostModelPricer::CostModelPricer(const Model& m, const Cluster& c, const Training& t,
                                 const Layout& l, const ExecutionOptions& x,
                                 const StepPrograms& step)
    : cluster_(c), training_(t), layout_(l), rates_(device_rates(c.device, t.dtype, x.profile)) {
  collective_options_.profile = x.profile;
  assert(c.device.peak_tflops(t.dtype) > 0 && "estimate() rejects a dtype the device lacks");
  // Each part from the layer (or end) that has it: a dense layer's attention and mlp, an MoE
  // layer's router and experts (its attention and norms are a dense layer's), the ends' embedding,
  // final norm and head.
  PartsCompute parts = layer_compute(m, t, l, false, rates_, x);
  if (m.is_moe()) {
    const PartsCompute moe = layer_compute(m, t, l, true, rates_, x);
    parts[Part::router] = moe[Part::router];
    parts[Part::experts] = moe[Part::experts];
  }
  const PartsCompute ends = ends_compute(m, t, l, rates_);
  parts[Part::embedding] = ends[Part::embedding];
  parts[Part::head_norm] = ends[Part::head_norm];
  parts[Part::head] = ends[Part::head];
  for (const auto& [part, name] : kPartNames) {
    const std::array<double, 3> s = part_pass_s(parts[part], l.recompute);
    for (size_t set = 0; set < kPartSets; ++set)
      if (has_part(static_cast<PartSet>(set), part))
        for (size_t pass = 0; pass < 3; ++pass) compute_s_[pass][set] += s[pass];
  }
  const RankShape shape = rank_shape(t, l);

  const int stages = l.pp * l.vpp;
  for (int vs = 0; vs < stages; ++vs) {
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    int64_t bytes = 0;
    for (int layer = layers.begin; layer < layers.end; ++layer)
      bytes += layer_activation_bytes(m, t.dtype, shape, m.is_moe_layer(layer), l.recompute, x);
    if (vs == 0) bytes += input_layer_activation_bytes(m, shape, x);
    if (vs == stages - 1) bytes += output_layer_activation_bytes(m, t.dtype, shape);
    chunk_activation_bytes_.push_back(bytes);
  }

  for (const Program& p : step.programs) {
    RankSpans& s = spans_[p.rank];
    for (const auto& [g, name] : kGroupNames)
      s.groups[static_cast<size_t>(g)] = ranks_span(c, g, p.groups[static_cast<size_t>(g)]);
    if (!p.embedding_group.empty())
      s.groups[kEmbeddingPair] = ranks_span(c, Group::pp, p.embedding_group);
    for (int64_t peer : p.groups[static_cast<size_t>(Group::pp)]) {
      const std::array<int64_t, 2> pair{p.rank, peer};
      s.pp_peers.push_back(ranks_span(c, Group::pp, pair));
    }
  }
}

const CostModelPricer::RankSpans& CostModelPricer::spans(const Program& p) const {
  const auto it = spans_.find(p.rank);
  assert(it != spans_.end() && "the program is one of the step the pricer was built for");
  return it->second;
}

const GroupSpan& CostModelPricer::group_span_of(const Program& p, const Action& a) const {
  const bool embedding_pair = a.kind == ActionKind::grad_reduce && a.group == Group::pp;
  return spans(p).groups[embedding_pair ? kEmbeddingPair : static_cast<size_t>(a.group)];
}

double CostModelPricer::duration_s(const Program& p, const Action& a) const {
  switch (a.kind) {
    case ActionKind::compute:
      return compute_s_[pass_index(a.pass)][a.parts];
    case ActionKind::send:
      return collective_cost(
                 cluster_, Collective::send_recv, a.bytes,
                 spans(p).pp_peers[static_cast<size_t>(rank_in_group(layout_, a.peer, Group::pp))],
                 collective_options_)
          .time_s;
    case ActionKind::recv:
      return 0;
    case ActionKind::collective:
    case ActionKind::grad_reduce:
    case ActionKind::param_gather: {
      CollectiveOptions o = collective_options_;
      o.cold_input = reads_cold_input(a);
      const GroupSpan& span = group_span_of(p, a);
      const int64_t local = grad_reduce_local_bytes(a, layout_.zero, span.size);
      return collective_cost(cluster_, a.op, a.bytes, span, o).time_s +
             memory_time_s(rates_, static_cast<double>(local));
    }
    case ActionKind::optimizer_step:
      return optimizer_step_time_s(rates_, training_, a.params);
  }
  return 0;
}

int64_t CostModelPricer::activation_bytes(const Program& p, int chunk) const {
  return chunk_activation_bytes_[static_cast<size_t>(virtual_stage(layout_, p.coord.pp, chunk))];
}

}  // namespace shardplan
