// A build without the CUDA backend: no device is ever usable.
#include "executor/cuda_devices.h"

namespace shardplan {

CudaDeviceQuery query_cuda_devices() {
  return {0, "this build has no CUDA backend: nvcc was not found when it was configured"};
}

}  // namespace shardplan
