// Every call into the CUDA runtime, cuBLAS and NCCL goes through one of these checks: a failure
// throws DeviceError (executor/runtime/device_error.h) naming the call as written, its file and
// line, the library's error name and text, and the rank.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#define SHARDPLAN_CUDA_CHECK(call) ::shardplan::check_cuda((call), #call, __FILE__, __LINE__)
#define SHARDPLAN_CUBLAS_CHECK(call) ::shardplan::check_cublas((call), #call, __FILE__, __LINE__)
#define SHARDPLAN_NCCL_CHECK(call) ::shardplan::check_nccl((call), #call, __FILE__, __LINE__)
// After a kernel launch: the launch's own error (a bad configuration), named by the kernel.
#define SHARDPLAN_LAUNCH_CHECK(kernel) \
  ::shardplan::check_cuda(cudaGetLastError(), #kernel "<<<...>>>", __FILE__, __LINE__)

namespace shardplan {

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace shardplan
