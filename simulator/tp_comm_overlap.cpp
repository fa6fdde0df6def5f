#include "simulator/tp_comm_overlap.h"

#include <algorithm>
#include <cassert>

namespace shardplan {

namespace {

// The methods' settings in NeMo's recipes (nemo/collections/llm/recipes/tp_overlap_configs/
// userbuffers.py, userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192, Llama 3 70B on H100; the
// other configs differ by a few SMs): the pipeline's chunks, and the SMs each method's kernels
// take: 1 for a ring exchange (the copy engines move its bytes), 24 and 16 for the output
// projection's and fc2's pipelined reduce-scatters (set_sm_margin: their GEMMs run on the other
// SMs throughout), 4 and 2 for the bulk gathers beside QKV's and fc1's dgrad, 24 and 4 for the
// bulk reduce-scatters beside their wgrad (no margin: the GEMM shares the SMs while they run).
constexpr int kPipelineChunks = 4, kRingSms = 1;
constexpr int kProjFpropSms = 24, kFc2FpropSms = 16;
constexpr int kQkvDgradSms = 4, kFc1DgradSms = 2, kQkvWgradSms = 24, kFc1WgradSms = 4;
constexpr PartSet kLayerLinearParts =
    part_bit(Part::attention_qkv) | part_bit(Part::attention_core) | part_bit(Part::mlp);

Part part_of(const Action& a) {
  for (const auto& [part, name] : kPartNames)
    if (has_part(a.parts, part)) return part;
  assert(false && "a collective is placed at a part");
  return Part::mlp;
}

struct Overlap {
  int tp = 1, sm_count = 0;

  // The share of the device `sms` take.
  double share(int sms) const { return sm_count > 0 ? static_cast<double>(sms) / sm_count : 0; }
  // Ring exchange: tp − 1 hops beside the GEMM's other tp − 1 chunks.
  double ring(double comm_s, double gemm_s) const {
    const double exposed = std::max(0.0, comm_s - gemm_s * (tp - 1.0) / tp);
    return exposed + (comm_s - exposed) * share(kRingSms);
  }
  // Pipeline: the last chunk's collective follows the GEMM, which runs on sm_count − sms SMs.
  double pipeline(double comm_s, double gemm_s, int sms) const {
    const double narrowed = sm_count > sms ? gemm_s * sms / (sm_count - sms) : 0;
    return std::max(comm_s / kPipelineChunks,
                    comm_s - gemm_s * (kPipelineChunks - 1.0) / kPipelineChunks) +
           narrowed;
  }
  // Bulk: the whole collective beside the whole GEMM, which shares the SMs while both run.
  double bulk(double comm_s, double gemm_s, int sms) const {
    const double exposed = std::max(0.0, comm_s - gemm_s);
    return exposed + (comm_s - exposed) * share(sms);
  }
};

}  // namespace

bool tp_overlapped(const Training& t, const Action& a, const GroupSpan& span) {
  return t.tp_comm_overlap && a.kind == ActionKind::collective && a.group == Group::tp &&
         (a.op == Collective::all_gather || a.op == Collective::reduce_scatter) &&
         (a.parts & kLayerLinearParts) != 0 && a.layer_end > a.layer_begin && span.level == 0;
}

double tp_overlapped_s(const Action& a, double comm_s, const PartsCompute& parts, const Layout& l,
                       int sm_count) {
  const Part part = part_of(a);
  const PartLinears& own = parts.linears_of(part);
  const Overlap o{l.tp, sm_count};
  const bool gather = a.op == Collective::all_gather;
  const bool attention = part != Part::mlp;
  if (a.pass != Pass::backward)  // forward, or full recomputation's re-forward
    return gather
               ? o.ring(comm_s, own.first.forward_s)
               : o.pipeline(comm_s, own.last.forward_s, attention ? kProjFpropSms : kFc2FpropSms);
  if (!gather)
    return o.bulk(comm_s, splits_backward(l.schedule) ? 0 : own.first.wgrad_s,
                  attention ? kQkvWgradSms : kFc1WgradSms);
  // The output projection's gradient gather also carries QKV's saved input, which QKV's dgrad
  // covers; the MLP's carries fc1's, beside fc1's dgrad.
  const PartLinears& input_owner = attention ? parts.linears_of(Part::attention_qkv) : own;
  return o.ring(comm_s / 2, own.last.dgrad_s) +
         o.bulk(comm_s / 2, input_owner.first.dgrad_s, attention ? kQkvDgradSms : kFc1DgradSms);
}

}  // namespace shardplan
