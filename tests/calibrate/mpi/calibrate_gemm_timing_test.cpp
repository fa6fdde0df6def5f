// Attention's GEMMs as a GPU batches them: recorded with their batch (the members' strides as
// attention.cpp lays the heads out), and timed on a CPU core, each batched call run whole over
// operands that hold every member of its batch (the Debug tests' AddressSanitizer sees any that do
// not) and taking its share of the batch's time.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "calibrate/calibrate_gemm.h"
#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

TEST_CASE("GEMM calls: attention in a GPU's strided batches, recorded and timed",
          "[calibrate][mpi]") {
  // Llama-style grouped-query attention: 8 heads over 2 kv heads (G = 4), head_dim 16, 2 sequences
  // of 32 tokens. Batched as a GPU batches it (all kv groups a call), each attention GEMM is one of
  // a batch of 2: the heads j and G + j of a sequence, G·D = 64 columns apart in the query rows, D
  // = 16 in the key rows, G·S·K = 4096 elements apart in the probabilities.
  const LayerDims d{.batch = 2,
                    .seq = 32,
                    .hidden = 128,
                    .heads = 8,
                    .kv_heads = 2,
                    .head_dim = 16,
                    .ffn = 256,
                    .tp = 1};
  const auto all_groups = [](int64_t kv_heads) { return kv_heads; };
  const auto calls = layer_gemm_calls(d, 64, "gqa", all_groups);
  const auto scores = std::find_if(calls.begin(), calls.end(),
                                   [](const GemmCall& c) { return c.what == "gqa attn scores"; });
  REQUIRE(scores != calls.end());
  CHECK(scores->m == 32);
  CHECK(scores->n == 32);
  CHECK(scores->k == 16);
  CHECK(scores->batch == 2);
  CHECK(scores->batch_stride_a == 4 * 16);
  CHECK(scores->batch_stride_b == 16);
  CHECK(scores->batch_stride_c == 4 * 32 * 32);
  // The same layer one head a call (a CPU core's): the same shapes, none batched.
  const auto one_head = layer_gemm_calls(d, 64, "gqa", heads_per_call_of(cpu_kernels<float>()));
  CHECK(one_head.size() == calls.size());
  CHECK(std::all_of(one_head.begin(), one_head.end(),
                    [](const GemmCall& c) { return c.batch == 1; }));
  CHECK(std::count_if(calls.begin(), calls.end(), [](const GemmCall& c) { return c.batch == 2; }) ==
        6);

  TensorAllocator alloc("gemm timings");
  const TimingOptions t{.warmup = 1, .samples = 1, .min_sample_s = 1e-5};
  const std::vector<GemmTiming> timings =
      time_gemm_calls(calls, t, MPI_COMM_WORLD, cpu_kernels<float>(), alloc, 0);
  REQUIRE(timings.size() == calls.size());
  for (const GemmTiming& g : timings) {
    INFO(g.call.what);
    CHECK(g.time_s > 0);
  }
  CHECK(alloc.current().total() == 0);  // every operand freed
}

}  // namespace
}  // namespace shardplan
