// A GEMM as a layer makes it, for whoever records a step's GEMMs rather than times them: its shape,
// ops and accumulation as the device runs it, and what the layer says about it at the call — its
// name and which operands it reads cold from memory. `shardplan calibrate` times the GEMMs it
// records from the layers' own calls (calibrate/layer_gemms.h), so that the layers are the one
// list of a model's GEMMs.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <tuple>

#include "executor/layers/matmul.h"

namespace shardplan {

// What a layer says where it calls a GEMM: its name ("fc1", "attn") and the call's ("wgrad",
// "scores"), and the operands a training step finds in memory rather than in a cache: a layer's
// weights and weight gradients, the activations its forward saved for its backward, all last
// touched a whole pass over the other layers ago, and outputs written into memory that long unused
// (attention's probabilities).
struct GemmSite {
  const char* name = "";
  const char* call = "";
  bool cold_a = false, cold_b = false, cold_c = false;
};

// C[m×n] (+)= op(A)·op(B) with op(A) m×k and op(B) k×n, on row-major matrices.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  Op op_a = Op::none, op_b = Op::none;
  Accumulate acc = Accumulate::overwrite;
  std::string what;  // the site's name and call ("fc1 wgrad"), which a recorder may prefix
  bool cold_a = false, cold_b = false, cold_c = false;  // GemmSite's
  // Elements between consecutive rows of A, B and C as stored (0: packed): an attention head's
  // q, k and v columns inside the QKV activation's rows, its context columns inside the context's.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // The batched call it was one of (kernels.h's GemmBatch): a GPU runs attention's heads as one
  // strided batch, far faster a GEMM than one head a call, so calibration times the batch whole.
  int64_t batch = 1;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;

  // Calls equal in all but `what` are the same GEMM.
  auto operator<=>(const GemmCall& o) const {
    return std::tie(m, n, k, op_a, op_b, acc, cold_a, cold_b, cold_c, stride_a, stride_b, stride_c,
                    batch, batch_stride_a, batch_stride_b, batch_stride_c) <=>
           std::tie(o.m, o.n, o.k, o.op_a, o.op_b, o.acc, o.cold_a, o.cold_b, o.cold_c, o.stride_a,
                    o.stride_b, o.stride_c, o.batch, o.batch_stride_a, o.batch_stride_b,
                    o.batch_stride_c);
  }
  bool operator==(const GemmCall& o) const { return (*this <=> o) == 0; }
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

}  // namespace shardplan
