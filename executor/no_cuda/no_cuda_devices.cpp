// A build without the CUDA backend: no device is ever usable.
#include "executor/runtime/cuda_devices.h"

namespace shardplan {

CudaDeviceQuery query_cuda_devices() {
  return {0,
          "this build has no CUDA backend: it was configured without nvcc, cuBLAS and NCCL, or "
          "with -DSHARDPLAN_CUDA=OFF"};
}

}  // namespace shardplan
