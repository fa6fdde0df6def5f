// Transformer Engine's userbuffers overlap of the sequence-parallel collectives with the GEMMs
// beside them (ExecutionOptions::tp_comm_overlap: Megatron-Core's --tp-comm-overlap, on in NeMo's
// performance recipes; Wang et al. 2023, "Overlap Communication with Dependent Computation via
// Decomposition in Large Deep Learning Models", ASPLOS). Each all-gather or reduce-scatter is cut
// into chunks that pass while the GEMM works on the chunk before, so only what the GEMM cannot
// cover stays on the critical path. The methods and their SMs are TE's defaults
// (transformer_engine/pytorch/module/base.py, initialize_ub):
//   ring_exchange  the forward all-gathers (qkv_fprop, fc1_fprop) and the backward's all-gather of
//                  the output gradient (proj_dgrad, fc2_dgrad): tp chunks by peer-to-peer copies
//                  on the copy engines (use_ce), 1 SM;
//   pipeline       the forward reduce-scatters (proj_fprop, fc2_fprop): 4 chunks, 16 SMs;
//   bulk           the backward's reduce-scatter of the input gradient (qkv_wgrad, fc1_wgrad): the
//                  whole collective beside the weight-gradient GEMM, 16 SMs.
// The program keeps each collective as an action of its own between the computes it separates;
// what it adds to its rank's path is priced here and the GEMM's loss to the SMs it takes is part
// of that (so no NCCL interference is charged on top).
#pragma once

#include "core/layout.h"
#include "core/schedule.h"
#include "simulator/execution_options.h"
#include "simulator/parts_compute.h"

namespace shardplan {

// Whether `a` is overlapped so: a tensor-parallel all-gather or reduce-scatter (sequence
// parallelism with tp > 1) under a framework that overlaps them.
bool tp_overlapped(const ExecutionOptions& x, const Action& a);

// The time `a` (tp_overlapped) adds to its rank's path when its `comm_s` runs beside the GEMMs
// of its part in its pass (`parts`, under recomputation `r`), their time G: a ring exchange over
// tp ranks exposes max(0, comm − G·(tp−1)/tp) (the GEMM's first chunk is the rank's own), a
// pipeline of n chunks max(comm/n, comm − G·(n−1)/n) (the last chunk's collective follows the
// GEMM), bulk max(0, comm − G); plus the GEMM slowed on the method's SMs of the device's
// `sm_count` while the communication runs beside it. The part's GEMMs all count as cover: the
// MLP's fc1 hosts the gather and fc2 the reduce-scatter, priced against both.
double tp_overlapped_s(const Action& a, double comm_s, const PartsCompute& parts, Recompute r,
                       int tp, int sm_count);

}  // namespace shardplan
