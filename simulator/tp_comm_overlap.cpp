#include "simulator/tp_comm_overlap.h"

#include <algorithm>
#include <cassert>

#include "simulator/action_cost.h"

namespace shardplan {

namespace {

// TE's default methods (tp_comm_overlap.h): how the collective is cut and the SMs it takes.
enum class Method { ring_exchange, pipeline, bulk };
constexpr int kPipelineChunks = 4, kCommSms = 16, kCopyEngineSms = 1;

Method method_of(const Action& a) {
  if (a.op == Collective::all_gather) return Method::ring_exchange;
  return a.pass == Pass::backward ? Method::bulk : Method::pipeline;
}

// The GEMM time of `a`'s part in its pass, as a compute action of that part prices it.
double part_gemm_s(const Action& a, const PartsCompute& parts, Recompute r) {
  Action compute = a;
  compute.kind = ActionKind::compute;
  compute.stream = Stream::compute;
  const MicrobatchCompute c = compute_action_cost(parts, compute, r);
  const PassCost& pass = a.pass == Pass::forward     ? c.forward
                         : a.pass == Pass::recompute ? c.recompute
                                                     : c.backward;
  return pass[OpKind::matmul].time_s;
}

}  // namespace

bool tp_overlapped(const ExecutionOptions& x, const Action& a) {
  return x.tp_comm_overlap && a.kind == ActionKind::collective && a.group == Group::tp &&
         (a.op == Collective::all_gather || a.op == Collective::reduce_scatter);
}

double tp_overlapped_s(const Action& a, double comm_s, const PartsCompute& parts, Recompute r,
                       int tp, int sm_count) {
  assert(a.kind == ActionKind::collective && a.group == Group::tp);
  const double gemm_s = part_gemm_s(a, parts, r);
  // Ring exchange: the GEMM starts on the rank's own chunk while the next arrives, each of the
  // tp − 1 hops beside one of the GEMM's tp chunks. Pipeline: the last chunk's reduce-scatter
  // follows the last GEMM chunk. Bulk: the whole collective beside the whole GEMM.
  double exposed = 0;
  int sms = kCommSms;
  switch (method_of(a)) {
    case Method::ring_exchange:
      exposed = std::max(0.0, comm_s - gemm_s * (tp - 1.0) / tp);
      sms = kCopyEngineSms;
      break;
    case Method::pipeline:
      exposed = std::max(comm_s / kPipelineChunks,
                         comm_s - gemm_s * (kPipelineChunks - 1.0) / kPipelineChunks);
      break;
    case Method::bulk:
      exposed = std::max(0.0, comm_s - gemm_s);
      break;
  }
  const double hidden = comm_s - exposed;
  const double slowed = sm_count > 0 ? hidden * sms / sm_count : 0;
  return exposed + slowed;
}

}  // namespace shardplan
