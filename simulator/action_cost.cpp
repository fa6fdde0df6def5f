#include "simulator/action_cost.h"

#include <cassert>

namespace shardplan {

PartsCompute model_parts_compute(const Model& m, const Training& t, const Layout& l,
                                 const DeviceRates& r, const ExecutionOptions& x) {
  // Each part from the layer (or end) that has it; an MoE layer's attention and norms are a dense
  // layer's.
  PartsCompute parts = layer_compute(m, t, l, false, r, x);
  if (m.is_moe()) {
    const PartsCompute moe = layer_compute(m, t, l, true, r, x);
    parts[Part::router] = moe[Part::router];
    parts[Part::experts] = moe[Part::experts];
  }
  const PartsCompute ends = ends_compute(m, t, l, r, x);
  for (Part p : {Part::embedding, Part::head_norm, Part::head}) parts[p] = ends[p];
  return parts;
}

MicrobatchCompute compute_action_cost(const PartsCompute& parts, const Action& a, Recompute r) {
  assert(a.kind == ActionKind::compute);
  MicrobatchCompute out;
  for (const auto& [part, name] : kPartNames) {
    if (!has_part(a.parts, part)) continue;
    const MicrobatchCompute& c = parts[part];
    switch (a.pass) {
      case Pass::forward:
        add_pass(out.forward, c.forward, 1);
        break;
      case Pass::backward:
        add_pass(out.backward, c.backward, 1);
        if (!(a.flags & kInputGradOnly)) add_pass(out.backward, c.weight_grad, 1);
        if (r != Recompute::full) add_pass(out.recompute, c.recompute, 1);
        break;
      case Pass::weight_grad:
        add_pass(out.weight_grad, c.weight_grad, 1);
        break;
      case Pass::recompute:
        add_pass(out.recompute, c.recompute, 1);
        break;
      case Pass::none:
        assert(false && "a compute action belongs to a pass");
    }
  }
  for (PassCost* p : {&out.forward, &out.backward, &out.weight_grad, &out.recompute})
    settle_host_bound(*p);
  return out;
}

double compute_action_s(const PartsCompute& parts, const Action& a, Recompute r) {
  return compute_action_cost(parts, a, r).time_s();
}

GroupActionCost group_action_cost(const Cluster& c, const DeviceRates& r,
                                  const CollectiveOptions& o, const Action& a,
                                  const GroupSpan& span, int zero) {
  assert(is_group_action(a));
  CollectiveOptions priced = o;
  priced.cold_input = reads_cold_input(a);
  return {collective_cost(c, a.op, a.bytes, span, priced),
          memory_time_s(r, static_cast<double>(grad_reduce_local_bytes(a, zero, span.size)))};
}

CollectiveCost send_cost(const Cluster& c, const CollectiveOptions& o, const Action& a,
                         const GroupSpan& pair) {
  assert(a.kind == ActionKind::send);
  return collective_cost(c, Collective::send_recv, a.bytes, pair, o);
}

}  // namespace shardplan
