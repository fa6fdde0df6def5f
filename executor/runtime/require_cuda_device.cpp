#include "executor/runtime/cuda_devices.h"

#include "core/error.h"

namespace shardplan {

void require_cuda_device(const char* option) {
  const CudaDeviceQuery q = query_cuda_devices();
  if (q.count > 0) return;
  throw InputError(option, "", "cuda: no CUDA device (" + q.error + ")", "use --backend cpu");
}

}  // namespace shardplan
