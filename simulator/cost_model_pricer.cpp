// Prices a schedule's actions with the cost model's rule for one action (simulator/action_cost.h):
// every part's compute built once, spans of every program's groups computed once.
#include "simulator/cost_model_pricer.h"

#include <cassert>

#include "simulator/action_cost.h"
#include "simulator/activation_memory.h"
#include "simulator/collective_cost.h"
#include "simulator/compute_model.h"
#include "simulator/interference.h"
#include "simulator/parts_compute.h"
#include "simulator/rank_shape.h"
#include "simulator/tp_comm_overlap.h"

namespace shardplan {

namespace {

constexpr size_t kEmbeddingPair = kGroupNames.size();  // group code of a tied-embedding reduction

}  // namespace

CostModelPricer::CostModelPricer(const Model& m, const Cluster& c, const Training& t,
                                 const Layout& l, const ExecutionOptions& x,
                                 const StepPrograms& step)
    : cluster_(c),
      training_(t),
      layout_(l),
      rates_(device_rates(c.device, t.dtype, x.profile)),
      parts_(model_parts_compute(m, t, l, rates_, x)) {
  collective_options_.profile = x.profile;
  assert(c.device.peak_tflops(t.dtype) > 0 && "estimate() rejects a dtype the device lacks");
  const RankShape shape = rank_shape(t, l);

  const int stages = l.pp * l.vpp;
  for (int vs = 0; vs < stages; ++vs) {
    const LayerRange layers = virtual_stage_layers(m, l, vs);
    int64_t bytes = 0, weight_grad = 0;
    for (int layer = layers.begin; layer < layers.end; ++layer) {
      bytes +=
          layer_activation_bytes(m, t.dtype, shape, m.is_moe_layer(layer), l.recompute, x, t.fp8);
      if (splits_backward(l.schedule))
        weight_grad +=
            layer_weight_grad_tensors(m, t.dtype, shape, m.is_moe_layer(layer), t.fp8).total();
    }
    if (vs == 0) bytes += input_layer_activation_bytes(m, shape, x);
    if (vs == stages - 1) bytes += output_layer_activation_bytes(m, t.dtype, shape);
    chunk_activation_bytes_.push_back(bytes);
    chunk_weight_grad_bytes_.push_back(weight_grad);
  }

  // The spans estimate() prices (stage_pricing.cpp): whole groups as group_span places them, the
  // pipeline's pairs as pipeline_pair_span does.
  for (const Program& p : step.programs) {
    RankSpans& s = spans_[p.rank];
    for (const auto& [g, name] : kGroupNames)
      s.groups[static_cast<size_t>(g)] = group_span(c, l, p.rank, g);
    if (!p.embedding_group.empty()) {
      assert(p.embedding_group.size() == 2 && "the first and last stages' ranks");
      s.groups[kEmbeddingPair] =
          pipeline_pair_span(c, l, p.embedding_group.front(), p.embedding_group.back());
    }
    for (int64_t peer : p.groups[static_cast<size_t>(Group::pp)])
      s.pp_peers.push_back(pipeline_pair_span(c, l, p.rank, peer));
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
      return compute_action_s(parts_, a, layout_.recompute);
    case ActionKind::send:
      return send_cost(
                 cluster_, collective_options_, a,
                 spans(p).pp_peers[static_cast<size_t>(rank_in_group(layout_, a.peer, Group::pp))])
          .time_s;
    case ActionKind::recv:
      return 0;
    case ActionKind::collective:
    case ActionKind::grad_reduce:
    case ActionKind::param_gather: {
      const GroupSpan& span = group_span_of(p, a);
      const double s =
          group_action_cost(cluster_, rates_, collective_options_, a, span, layout_.zero).time_s();
      // Overlapped with its GEMMs it costs what they leave exposed (simulator/tp_comm_overlap.h).
      return tp_overlapped(training_, a, span)
                 ? tp_overlapped_s(a, s, parts_, layout_, cluster_.device.efficiency.sm_count)
                 : s;
    }
    case ActionKind::optimizer_step:
      return optimizer_step_time_s(rates_, training_, a.params);
  }
  return 0;
}

double CostModelPricer::interference_share(const Program& p, const Action& a) const {
  if (!is_group_action(a) || a.stream == Stream::compute) return 0;
  const GroupSpan& span = group_span_of(p, a);
  // An overlapped collective's cost holds its GEMMs' loss already.
  if (tp_overlapped(training_, a, span)) return 0;
  return shardplan::interference_share(
      cluster_, a, span,
      group_action_cost(cluster_, rates_, collective_options_, a, span, layout_.zero).collective);
}

int64_t CostModelPricer::activation_bytes(const Program& p, int chunk) const {
  return chunk_activation_bytes_[static_cast<size_t>(virtual_stage(layout_, p.coord.pp, chunk))];
}

int64_t CostModelPricer::weight_grad_bytes(const Program& p, int chunk) const {
  return chunk_weight_grad_bytes_[static_cast<size_t>(virtual_stage(layout_, p.coord.pp, chunk))];
}

}  // namespace shardplan
