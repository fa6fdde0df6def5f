#include "simulator/priced_ops.h"

#include <algorithm>

namespace shardplan {

OpTable op_table(const Plan& p, const DeviceRates& rates, const ExecutionOptions& x) {
  std::vector<PricedOp> ops;
  layer_compute(p.model, p.training, p.layout, false, rates, x, &ops);
  if (p.model.is_moe()) {
    std::vector<PricedOp> moe;
    layer_compute(p.model, p.training, p.layout, true, rates, x, &moe);
    std::erase_if(ops, [](const PricedOp& o) { return o.part == Part::router; });
    for (const PricedOp& o : moe)
      if (o.part == Part::router || o.part == Part::experts) ops.push_back(o);
  }
  ends_compute(p.model, p.training, p.layout, rates, x, &ops);
  OpTable table;
  for (const PricedOp& o : ops) table[{o.part, o.pass}].push_back(o);
  return table;
}

std::vector<const PricedOp*> action_ops(const OpTable& table, const Action& a, Recompute r) {
  std::vector<const PricedOp*> out;
  const auto add = [&](Part part, Pass pass) {
    const auto it = table.find({part, pass});
    if (it != table.end())
      for (const PricedOp& o : it->second) out.push_back(&o);
  };
  for (const auto& [part, name] : kPartNames) {
    if (!has_part(a.parts, part)) continue;
    add(part, a.pass);
    if (a.pass == Pass::backward && !(a.flags & kInputGradOnly)) add(part, Pass::weight_grad);
    if (a.pass == Pass::backward && r != Recompute::full) add(part, Pass::recompute);
  }
  return out;
}

double gemm_flops(const PricedOp& op) {
  return 2.0 * static_cast<double>(op.m) * static_cast<double>(op.n) * static_cast<double>(op.k) *
         static_cast<double>(op.count);
}

ProgramGemms program_gemms(const OpTable& table, const Program& p, Recompute r) {
  ProgramGemms g;
  for (const Action& a : p.actions) {
    if (a.kind != ActionKind::compute) continue;
    for (const PricedOp* o : action_ops(table, a, r))
      if (o->kind == OpKind::matmul) {
        g.flops += gemm_flops(*o);
        g.time_s += o->time_s;
      }
  }
  return g;
}

}  // namespace shardplan
