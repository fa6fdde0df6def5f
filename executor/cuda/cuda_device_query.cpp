#include "executor/runtime/cuda_devices.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace shardplan {

CudaDeviceQuery query_cuda_devices() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return {0,
            fmt::format("cudaGetDeviceCount: {}: {}", cudaGetErrorName(e), cudaGetErrorString(e))};
  if (count == 0) return {0, "cudaGetDeviceCount: 0 devices"};
  return {count, ""};
}

}  // namespace shardplan
