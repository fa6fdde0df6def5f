// GEMM microbenchmarks over the shapes a model's layers use: every GEMM call the executor's layers
// make for a tp rank's share of a layer and of the LM head, as recorded from the layers themselves
// (layer_gemms.h), timed through the executor's own GEMM (Kernels::run_gemm_batched: Eigen on a CPU
// core, cuBLAS on a GPU) with every rank running at once.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "calibrate/calibrate_timing.h"
#include "calibrate/layer_gemms.h"
#include "core/profile.h"
#include "executor/kernels.h"
#include "executor/layers/gemm_call.h"
#include "executor/layers/layer_context.h"

namespace shardplan {

// The distinct GEMM calls of one layer's forward and backward pass and of the LM head's (over
// `vocab_rows` rows of the vocabulary), for the rank share `d`, in the order the layers first make
// them (record_layer_gemms), attention batched as `heads_per_call` says; `label` prefixes each
// call's `what`. Calls that differ in a cold or strided operand or in their batch are distinct:
// they are timed apart (gemm_rates sums them).
std::vector<GemmCall> layer_gemm_calls(const LayerDims& d, int64_t vocab_rows,
                                       const std::string& label,
                                       const HeadsPerCall& heads_per_call);

// Adds the calls not already in `into` (equal in all but `what`), keeping order.
void add_distinct(std::vector<GemmCall>& into, const std::vector<GemmCall>& calls);

struct GemmTiming {
  GemmCall call;
  double time_s = 0;
};

// Times each call on `dev` with operands from `alloc` (the device's memory), every rank of `comm`
// running it at once; a call of a batch is timed as its whole batch, and takes its share. Calls
// take turns over copies of their cold operands (calibrate_memory.h's cold_copies of `cold_bytes`),
// so that no cache holds the next call's (0: one copy, cached after the first call). T: the
// operands' type (float, or bf16 for a mixed-precision profile).
template <class T>
std::vector<GemmTiming> time_gemm_calls(const std::vector<GemmCall>& calls, const TimingOptions& t,
                                        MPI_Comm comm, Kernels<T>& dev, TensorAllocator& alloc,
                                        int64_t cold_bytes);

// One rate per distinct (m, n, k): the FLOPs of one call of each variant (ops, accumulation, cold
// or strided operands) over their summed time, the rate a step making each once would see.
std::vector<GemmRate> gemm_rates(const std::vector<GemmTiming>& timings);

void print_gemm_timings(std::FILE* out, const std::vector<GemmTiming>& timings);

}  // namespace shardplan
