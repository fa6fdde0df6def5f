// GEMM microbenchmarks over the shapes a model's layers use: every GEMM call the executor's layers
// make (executor/layers/linear.cpp, executor/layers/attention.cpp) for a tp rank's share of a layer
// and of the LM head, timed through the executor's own GEMM (Kernels::gemm: Eigen on a CPU core,
// cuBLAS on a GPU) with every rank running at once.
#pragma once

#include <mpi.h>

#include <compare>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "calibrate/calibrate_timing.h"
#include "core/profile.h"
#include "executor/kernels.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// C[m×n] (+)= op(A)·op(B) with op(A) m×k and op(B) k×n, on row-major matrices (of the profile's
// dtype: fp32, or bf16 accumulating in fp32).
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  Op op_a = Op::none, op_b = Op::none;
  Accumulate acc = Accumulate::overwrite;
  std::string what;  // where the first layer making it does ("gpt-small tp=2 fc1 wgrad")
  // Operands a training step finds in memory rather than in a cache: a layer's weights and weight
  // gradients, the activations its forward saved for its backward, all last touched a whole pass
  // over the other layers ago, and outputs written into memory that long unused (attention's
  // probabilities). One shape's calls that differ in them are timed apart (gemm_rates sums them).
  bool cold_a = false, cold_b = false, cold_c = false;
  // Elements between consecutive rows of A, B and C as stored (0: packed): an attention head's
  // q, k and v columns inside the QKV activation's rows, its context columns inside the context's.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;

  auto operator<=>(const GemmCall& o) const {
    return std::tie(m, n, k, op_a, op_b, acc, cold_a, cold_b, cold_c, stride_a, stride_b,
                    stride_c) <=> std::tie(o.m, o.n, o.k, o.op_a, o.op_b, o.acc, o.cold_a, o.cold_b,
                                           o.cold_c, o.stride_a, o.stride_b, o.stride_c);
  }
  bool operator==(const GemmCall& o) const { return (*this <=> o) == 0; }
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// The GEMM calls of one layer's forward and backward pass and of the LM head's (over `vocab_rows`
// rows of the vocabulary), for the rank share `d`; `label` prefixes each call's `what`.
std::vector<GemmCall> layer_gemm_calls(const LayerDims& d, int64_t vocab_rows,
                                       const std::string& label);

// Adds the calls not already in `into` (equal in all but `what`), keeping order.
void add_distinct(std::vector<GemmCall>& into, const std::vector<GemmCall>& calls);

struct GemmTiming {
  GemmCall call;
  double time_s = 0;
};

// Times each call on `dev` with operands from `alloc` (the device's memory), every rank of `comm`
// running it at once. Calls take turns over copies of their cold operands (calibrate_memory.h's
// cold_copies of `cold_bytes`), so that no cache holds the next call's (0: one copy, cached after
// the first call).
// T: the operands' type (float, or bf16 for a mixed-precision profile).
template <class T>
std::vector<GemmTiming> time_gemm_calls(const std::vector<GemmCall>& calls, const TimingOptions& t,
                                        MPI_Comm comm, Kernels<T>& dev, TensorAllocator& alloc,
                                        int64_t cold_bytes);

// One rate per distinct (m, n, k): the FLOPs of one call of each variant (ops, accumulation, cold
// or strided operands) over their summed time, the rate a step making each once would see.
std::vector<GemmRate> gemm_rates(const std::vector<GemmTiming>& timings);

void print_gemm_timings(std::FILE* out, const std::vector<GemmTiming>& timings);

}  // namespace shardplan
