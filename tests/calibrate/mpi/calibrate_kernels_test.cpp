// The memory-bound kernels' microbenchmarks on a rank share narrower than the hidden size (a
// Llama-style layer at tp=8: the MLP's and QKV's columns per rank fewer than the hidden size),
// where the operands were once sized by those columns alone and the residual and norm ran past them
// (on an H100: cudaErrorInvalidValue from the residual's copy; on a CPU core, AddressSanitizer's
// heap-buffer-overflow in the Debug tests), and Adam timed once per distinct size.
#include "calibrate/calibrate_kernels.h"

#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "executor/cpu_kernels.h"

namespace shardplan {
namespace {

// Llama 3's shape, scaled down: grouped-query attention (32 heads over 8 kv heads of 16), SwiGLU
// with an intermediate size 3.5 times the hidden size, RMSNorm, RoPE, untied embeddings.
Model narrow_llama() {
  Model m;
  m.name = "narrow-llama";
  m.num_layers = 2;
  m.hidden = 512;
  m.num_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 16;
  m.ffn_hidden = 1792;
  m.vocab = 1024;
  m.max_seq = 32;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position_embedding = PositionEmbedding::rope;
  return m;
}

TEST_CASE("kernel timings: a tp=8 share narrower than the hidden size, Adam once a size",
          "[calibrate][mpi]") {
  CalibrateOptions o;
  o.models = {narrow_llama()};
  o.tp = {8};
  o.micro_batches = {1, 2};
  o.seq = 16;
  o.timing = {.warmup = 1, .samples = 1, .min_sample_s = 1e-5};
  const std::vector<LayerShare> shares = layer_shares(o);
  REQUIRE(shares.size() == 2);
  const LayerDims& d = shares[0].dims;
  REQUIRE(d.fc1_width() < d.hidden);  // 2 x 1792 / 8 = 448 columns of 512
  REQUIRE(d.qkv_width() < d.hidden);  // (4 + 2 x 1) x 16 = 96

  TensorAllocator alloc("kernel timings");
  const std::vector<KernelTiming> timings =
      model_kernel_timings(shares, o.timing, MPI_COMM_WORLD, cpu_kernels<float>(), alloc);
  const auto timed = [&](MemoryKernel k) {
    return std::count_if(timings.begin(), timings.end(),
                         [&](const KernelTiming& t) { return t.kernel == k; });
  };
  CHECK(timed(MemoryKernel::residual_backward) == 2);
  CHECK(timed(MemoryKernel::norm_forward) == 2);
  CHECK(timed(MemoryKernel::optimizer_step) == 1);  // the micro-batch does not change Adam's size
  for (const KernelTiming& t : timings) {
    INFO(enum_name(t.kernel, kMemoryKernelNames) << " of " << t.what);
    CHECK(t.time_s > 0);
  }
  const auto residual = std::find_if(timings.begin(), timings.end(), [](const KernelTiming& t) {
    return t.kernel == MemoryKernel::residual_backward;
  });
  REQUIRE(residual != timings.end());
  CHECK(residual->elements == static_cast<double>(16 * d.hidden));  // a sequence of 16 tokens
}

}  // namespace
}  // namespace shardplan
