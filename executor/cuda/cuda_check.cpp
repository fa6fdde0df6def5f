#include "executor/cuda/cuda_check.h"

#include <fmt/format.h>

#include "executor/runtime/device_error.h"

namespace shardplan {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw_device_error(call, file, line,
                     fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status)));
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw_device_error(
      call, file, line,
      fmt::format("{}: {}", cublasGetStatusName(status), cublasGetStatusString(status)));
}

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  // ncclGetLastError says more than the result's string (which peer, which transport).
  const char* detail = ncclGetLastError(nullptr);
  throw_device_error(call, file, line,
                     fmt::format("{}{}{}", ncclGetErrorString(status),
                                 detail != nullptr && *detail != '\0' ? ": " : "",
                                 detail != nullptr ? detail : ""));
}

}  // namespace shardplan
