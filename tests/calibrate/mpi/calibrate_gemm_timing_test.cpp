// GEMM calls timed as a GPU batches attention, on a CPU core: each batched call runs whole over
// operands that hold every member of its batch (the Debug tests' AddressSanitizer sees any that
// do not), and takes its share of the batch's time.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "calibrate/calibrate_gemm.h"
#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

TEST_CASE("GEMM timings: attention's batched calls timed whole", "[calibrate][mpi]") {
  // Grouped-query attention, 8 heads over 2 kv heads: each attention GEMM one of a batch of 2.
  const LayerDims d{.batch = 2,
                    .seq = 32,
                    .hidden = 128,
                    .heads = 8,
                    .kv_heads = 2,
                    .head_dim = 16,
                    .ffn = 256,
                    .tp = 1};
  const std::vector<GemmCall> calls =
      layer_gemm_calls(d, 64, "gqa", [](int64_t kv_heads) { return kv_heads; });
  REQUIRE(std::count_if(calls.begin(), calls.end(),
                        [](const GemmCall& c) { return c.batch == 2; }) == 6);
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
