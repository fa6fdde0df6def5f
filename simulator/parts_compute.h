// The compute of one micro-batch split as the schedule splits it, for the simulator's pricer.
// Defined in compute_model.cpp beside microbatch_compute; a header of its own so that the cost
// model's users do not see the schedule's names.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "core/memory_kernel.h"
#include "core/model.h"
#include "core/schedule.h"
#include "core/training.h"
#include "simulator/compute_model.h"

namespace shardplan {

// One micro-batch's passes over one layer, or over the model's ends, split by the parts the
// schedule runs as separate compute actions (core/schedule.h): attention_norm (input norm),
// attention_qkv (QKV projection, rotary embedding), attention_core (attention, output projection,
// residual add), mlp_norm (pre-MLP norm), mlp (MLP, residual add) or router (gate) and experts
// (permutation, expert MLPs, residual add); embedding (lookup); head_norm (final norm); head (LM
// head, cross entropy).
// microbatch_compute is the sum of these over a stage's layers and ends.
// A linear layer's GEMM times in one micro-batch: forward, and the backward's input gradient
// (dgrad) and weight gradient (wgrad).
struct LinearGemms {
  double forward_s = 0, dgrad_s = 0, wgrad_s = 0;
};
// A part's first and last linear layer (QKV; the output projection; fc1 and fc2): the GEMMs
// TransformerEngine's userbuffers hide the part's tensor-parallel collectives behind
// (simulator/tp_comm_overlap.h). Zero where the part has none.
struct PartLinears {
  LinearGemms first, last;
};

struct PartsCompute {
  std::array<MicrobatchCompute, kPartNames.size()> parts{};
  std::array<PartLinears, kPartNames.size()> linears{};

  MicrobatchCompute& operator[](Part p) { return parts[static_cast<size_t>(p)]; }
  const MicrobatchCompute& operator[](Part p) const { return parts[static_cast<size_t>(p)]; }
  PartLinears& linears_of(Part p) { return linears[static_cast<size_t>(p)]; }
  const PartLinears& linears_of(Part p) const { return linears[static_cast<size_t>(p)]; }
};

// One operation the cost model priced in one pass of one part: a GEMM C[m×n] = A[m×k]·B[k×n]
// (`count` of them) as gemm_rate_flops looks its rate up, or a memory-bound kernel over `elements`
// (core/memory_kernel.h). What `calibrate --from` rescales by measured time (simulator/
// profile_refit.h).
struct PricedOp {
  Part part = Part::attention_qkv;
  Pass pass = Pass::forward;  // forward, backward or recompute (the re-forward)
  OpKind kind = OpKind::matmul;
  int64_t m = 0, n = 0, k = 0, count = 1;            // matmul
  MemoryKernel kernel = MemoryKernel::norm_forward;  // memory_bound
  double elements = 0;                               // memory_bound
  double time_s = 0;
};

// With `ops`, every priced operation is appended to it as well.
PartsCompute layer_compute(const Model& m, const Training& t, const Layout& l, bool moe_layer,
                           const DeviceRates& r, const ExecutionOptions& x,
                           std::vector<PricedOp>* ops = nullptr);
// The embedding and head parts, whichever stage holds them.
PartsCompute ends_compute(const Model& m, const Training& t, const Layout& l, const DeviceRates& r,
                          const ExecutionOptions& x, std::vector<PricedOp>* ops = nullptr);

}  // namespace shardplan
