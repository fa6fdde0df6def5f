#include "executor/cuda/device_memory.h"

#include "executor/cuda/cuda_check.h"

namespace shardplan {

void* DeviceMemory::allocate(int64_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, static_cast<size_t>(bytes));
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear it: the allocator reports the full memory as AllocationError
    return nullptr;
  }
  SHARDPLAN_CUDA_CHECK(status);
  return p;
}

void DeviceMemory::release(void* p) {
  SHARDPLAN_CUDA_CHECK(cudaFree(p));
}

// On the compute stream whatever stream is selected: a cached block's last user may be a kernel
// still queued there. An action on another stream waits for the compute stream after allocating
// (the interpreter's side_buffer).
void DeviceMemory::fill(void* p, int64_t bytes, unsigned char value) {
  SHARDPLAN_CUDA_CHECK(cudaMemsetAsync(p, value, static_cast<size_t>(bytes), ctx_.compute()));
}

}  // namespace shardplan
