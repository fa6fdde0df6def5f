// What the CUDA tests share: skipping when the machine has no CUDA device (the test passes after
// printing "skipped: no CUDA device", which CTest's SKIP_REGULAR_EXPRESSION reports as a skip), and
// one rank's GPU — context, device memory through an allocator, the CUDA kernels for fp32 and bf16.
#pragma once

#include <cstdio>
#include <type_traits>

#include "executor/cuda/cuda_context.h"
#include "executor/cuda/cuda_kernels.h"
#include "executor/cuda/device_memory.h"
#include "executor/runtime/cuda_devices.h"

// Ends the test case (passing) when no device is usable; prints why on stdout, where CTest looks.
#define SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(devices_needed)                                       \
  do {                                                                                           \
    const ::shardplan::CudaDeviceQuery q_ = ::shardplan::query_cuda_devices();                   \
    if (q_.count < (devices_needed)) {                                                           \
      std::printf("skipped: no CUDA device (%d of %d needed%s%s)\n", q_.count, (devices_needed), \
                  q_.error.empty() ? "" : ": ", q_.error.c_str());                               \
      return;                                                                                    \
    }                                                                                            \
  } while (false)

namespace shardplan::test {

// Device 0 with fp32 GEMMs, its memory itemised by one allocator, and its kernels.
struct CudaRank {
  CudaContext ctx{0, MatmulPrecision::fp32};
  DeviceMemory memory{ctx};
  TensorAllocator alloc{"cuda test", 0, &memory};
  CudaKernels<float> kernels{ctx, alloc};
  CudaKernels<bf16> bf16_kernels{ctx, alloc};

  // The kernels for storage type T.
  template <class T>
  CudaKernels<T>& kernels_for() {
    if constexpr (std::is_same_v<T, float>)
      return kernels;
    else
      return bf16_kernels;
  }
};

}  // namespace shardplan::test
