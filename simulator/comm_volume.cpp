#include "simulator/comm_volume.h"

#include <cassert>

#include "core/collective.h"

namespace shardplan {

CommWindow comm_window(const Action& a) {
  switch (a.kind) {
    case ActionKind::send:
    case ActionKind::recv:
      return CommWindow::pipeline;
    case ActionKind::grad_reduce:
      // Data-parallel buckets overlap the backward on the dp-comm stream, unless the framework runs
      // them on the compute stream after it; the step-end reductions over tp (SP norms) and of the
      // tied embedding (over dp, then the pp pair) wait for every bucket.
      return a.stream == Stream::dp_comm ? CommWindow::backward : CommWindow::none;
    case ActionKind::param_gather:
      // ZeRO-1/2's step-start gathers on the compute stream (a framework that gathers the
      // updated parameters whole) hide behind nothing.
      if (a.stream == Stream::compute) return CommWindow::none;
      return a.pass == Pass::backward ? CommWindow::backward : CommWindow::forward;
    case ActionKind::collective:
      return CommWindow::none;
    case ActionKind::compute:
    case ActionKind::optimizer_step:
      break;
  }
  assert(false && "not a communication action");
  return CommWindow::none;
}

int64_t dense_replicas(const Layout& l) {
  return int64_t{l.dp} * l.cp;
}
int64_t expert_replicas(const Layout& l) {
  return int64_t{l.dp / l.ep} * l.cp;
}

double volume_bytes(Collective op, int64_t bytes, int n, int64_t calls_per_step) {
  return static_cast<double>(bytes) * bus_bandwidth_factor(op, n) *
         static_cast<double>(calls_per_step);
}

}  // namespace shardplan
