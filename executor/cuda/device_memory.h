// A GPU's memory as a TensorAllocator's source (tensor_allocator.h): blocks from cudaMalloc,
// filled on the compute stream, so a rank's device memory is itemised by the same
// allocator and categories as the CPU backend's.
#pragma once

#include "executor/cuda/cuda_context.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

class DeviceMemory final : public MemorySource {
 public:
  explicit DeviceMemory(CudaContext& ctx) : ctx_(ctx) {}
  void* allocate(int64_t bytes) override;  // nullptr when the GPU's memory is full
  void release(void* p) override;
  void fill(void* p, int64_t bytes, unsigned char value) override;

 private:
  CudaContext& ctx_;
};

}  // namespace shardplan
