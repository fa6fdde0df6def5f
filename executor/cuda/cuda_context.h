// One rank's GPU as its kernels see it: the device, the compute stream, the stream the next kernels
// and copies go to (the compute stream, or a communication stream an interpreter selected for the
// action it runs there), and the cuBLAS handle with the GEMMs' precision.
#pragma once

#include "executor/cuda/cuda_raii.h"
#include "executor/runtime/cuda_rank.h"

namespace shardplan {

class CudaContext {
 public:
  // Makes `device` this thread's current device.
  CudaContext(int device, MatmulPrecision precision);
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  cudaStream_t compute() const { return compute_.get(); }
  cudaStream_t stream() const { return current_; }
  void select(cudaStream_t s) { current_ = s; }
  cublasHandle_t cublas() const { return cublas_.get(); }
  // `waiter` waits for everything issued to `s` so far.
  void wait(cudaStream_t waiter, cudaStream_t s) { stream_wait(waiter, s, order_); }

 private:
  int device_;
  CudaStream compute_;
  CublasHandle cublas_;
  CudaEvent order_;
  cudaStream_t current_;
};

}  // namespace shardplan
