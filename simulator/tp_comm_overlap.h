// Transformer Engine's userbuffers overlap of the sequence-parallel collectives with the GEMMs
// beside them (Training::tp_comm_overlap, from the framework: Megatron-Core's --tp-comm-overlap, on
// in NeMo's performance recipes; Wang et al. 2023, "Overlap Communication with Dependent
// Computation via Decomposition in Large Deep Learning Models", ASPLOS). Each all-gather or
// reduce-scatter of a layer's linears is cut into chunks that pass while a GEMM works, so only what
// the GEMM cannot cover stays on the critical path. The methods
// (transformer_engine/pytorch/module/base.py, initialize_ub) as NeMo's recipes set them
// (tp_comm_overlap.cpp has their SMs):
//   ring_exchange  the forward all-gather of QKV's and fc1's input (qkv_fprop, fc1_fprop) beside
//                  those GEMMs, and going backward the gather of the output projection's and
//                  fc2's output gradient (proj_dgrad, fc2_dgrad) beside their dgrad: tp chunks,
//                  peer-to-peer copies on the copy engines;
//   pipeline       the forward reduce-scatter after the output projection and fc2 (proj_fprop,
//                  fc2_fprop): 4 chunks, the GEMM on the SMs the communication leaves
//                  (set_sm_margin);
//   bulk           going backward, the gather of QKV's and fc1's saved input beside their dgrad
//                  (qkv_dgrad, fc1_dgrad) and the reduce-scatter of their input gradient beside
//                  their wgrad (qkv_wgrad, fc1_wgrad): the whole collective beside the whole GEMM.
// Userbuffers run within one NVLink domain. The program keeps each collective as an action of its
// own between the computes it separates; what it adds to its rank's path is priced here, its
// GEMMs' loss of SMs included (so no NCCL interference is charged on top). Userbuffers' own memory
// is not priced.
#pragma once

#include "core/layout.h"
#include "core/placement.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/parts_compute.h"

namespace shardplan {

// Whether `a` is overlapped so: a layer's tensor-parallel all-gather or reduce-scatter around its
// attention or dense MLP (sequence parallelism with tp > 1; not the embedding's, the head's, the
// router's or the experts') within the innermost level of the cluster (`span`), under a training
// whose framework overlaps them.
bool tp_overlapped(const Training& t, const Action& a, const GroupSpan& span);

// The time `a` (tp_overlapped) adds to its rank's path when its `comm_s` runs beside its GEMMs
// (`parts`' linears; no weight gradient beside it under `l`'s split backward, which defers them),
// of l.tp ranks on a device of `sm_count` SMs: with cover G, a ring exchange exposes
// max(0, comm − G·(tp−1)/tp) (the GEMM's first chunk is the rank's own), a pipeline of n chunks
// max(comm/n, comm − G·(n−1)/n) (the last chunk follows the GEMM) plus the GEMM slowed to the SMs
// left to it, bulk max(0, comm − G); plus, for ring and bulk, the hidden time × the SMs the
// communication takes ÷ sm_count. The backward's gather carries the output gradient (ring) and
// the saved input (bulk), half each.
double tp_overlapped_s(const Action& a, double comm_s, const PartsCompute& parts, const Layout& l,
                       int sm_count);

}  // namespace shardplan
