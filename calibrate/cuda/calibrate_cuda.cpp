#include "calibrate/calibrate_cuda.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "calibrate/calibrate_gemm.h"
#include "calibrate/calibrate_kernels.h"
#include "calibrate/cuda/nccl_collectives.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda/device_memory.h"
#include "executor/cuda/node_device.h"

namespace shardplan {

namespace {

std::string device_name(int device) {
  cudaDeviceProp prop{};
  SHARDPLAN_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

int64_t l2_cache_bytes(int device) {
  int bytes = 0;
  SHARDPLAN_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return bytes;
}

// The device's memory bandwidth as STREAM's copy measures it (McCalpin 1995: two arrays' bytes per
// element, no write-allocate): a device-to-device copy of `elements` floats, every rank at once.
double copy_GBps(Kernels<float>& dev, TensorAllocator& alloc, int64_t elements,
                 const TimingOptions& t, MPI_Comm world) {
  Buffer<float> a = alloc.allocate<float>(MemoryCategory::buffers, elements, "copy source"),
                b = alloc.allocate<float>(MemoryCategory::buffers, elements, "copy target");
  const double s = median_time_s([&] { dev.copy(b.data(), a.data(), elements); }, t, world, {},
                                 [&] { dev.synchronize(); });
  return 2.0 * static_cast<double>(elements) * sizeof(float) / s / 1e9;
}

// 2^26 floats (256 MiB) a copy array: far beyond any GPU's L2 cache (50 MiB on an H100).
constexpr int64_t kCopyElements = int64_t{1} << 26;

}  // namespace

Profile calibrate_cuda(const CalibrateOptions& o, const CudaSettings& settings, MPI_Comm world,
                       std::FILE* out) {
  int rank = 0, world_size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &world_size);
  validate_calibrate_options(o, world_size);
  CudaContext ctx(node_device(), settings.matmul);
  DeviceMemory memory(ctx);
  TensorAllocator alloc("rank " + std::to_string(rank), 0, &memory);
  CudaKernels<float> kernels(ctx, alloc);
  CudaKernels<bf16> bf16_kernels(ctx, alloc);

  Profile p;
  p.backend = Backend::cuda;
  p.device = device_name(ctx.device());
  p.ranks = world_size;
  p.dtype = o.dtype;
  const bool tf32 = settings.matmul == MatmulPrecision::tf32;
  if (rank == 0)
    fmt::print(out, "# shardplan calibrate: {} rank{}, one {} each, {}{}\n\n", world_size,
               world_size == 1 ? "" : "s", p.device, enum_name(o.dtype, kDtypeNames),
               tf32 ? " (TF32 GEMMs)" : "");

  const std::vector<LayerShare> shares = layer_shares(o);
  // The GEMMs and kernels in the profile's dtype (bf16: cublasGemmEx on CUDA_R_16BF, fp32
  // accumulation), operands from device memory as in a training step (calibrate_cpu.cpp's rule,
  // with the L2), attention's GEMMs in the strided batches the backend runs them in (one head a
  // call is several times slower a GEMM on a GPU: docs/measurements.md).
  std::vector<GemmTiming> gemm;
  std::vector<KernelTiming> kernel_timings;
  const auto timed_in = [&](auto& dev) {
    gemm = time_gemm_calls(model_gemm_calls(shares, heads_per_call_of(dev)), o.one_pass_timing(),
                           world, dev, alloc, 2 * l2_cache_bytes(ctx.device()));
    kernel_timings = model_kernel_timings(shares, o.one_pass_timing(), world, dev, alloc);
  };
  if (o.dtype == Dtype::bf16)
    timed_in(bf16_kernels);
  else
    timed_in(kernels);
  if (rank == 0) print_gemm_timings(out, gemm);
  p.gemm = gemm_rates(gemm);
  if (rank == 0) print_kernel_timings(out, kernel_timings);
  p.kernels = kernel_rates(kernel_timings);

  const int64_t elements = o.stream_elements > 0 ? o.stream_elements : kCopyElements;
  p.memory_GBps = measuring("timing a device copy", [&] {
    return copy_GBps(kernels, alloc, elements, o.one_pass_timing(), world);
  });
  if (rank == 0)
    fmt::print(out, "# device memory: copy of {} floats ({:.0f} MiB), {:.1f} GB/s a GPU\n\n",
               elements, static_cast<double>(elements) * sizeof(float) / (1 << 20), p.memory_GBps);

  p.collectives = measure_collectives(
      o.sweep, world,
      [&](MPI_Comm group) {
        return std::make_unique<NcclCollectiveRunner>(group, ctx, kernels, alloc);
      },
      out);
  if (rank == 0 && world_size == 1)
    fmt::print(out, "# collectives: none on one rank (--ranks N: one rank per GPU)\n");
  if (rank == 0) std::fflush(out);
  return rank_zero_profile(p, world);
}

}  // namespace shardplan
