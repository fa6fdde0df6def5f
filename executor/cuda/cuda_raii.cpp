#include "executor/cuda/cuda_raii.h"

#include "executor/cuda/cuda_check.h"

namespace shardplan {

CudaStream::CudaStream() {
  cudaStream_t s = nullptr;
  SHARDPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  s_.reset(s);
}

CudaEvent::CudaEvent(EventKind kind) {
  cudaEvent_t e = nullptr;
  SHARDPLAN_CUDA_CHECK(cudaEventCreateWithFlags(
      &e, kind == EventKind::timing ? cudaEventDefault : cudaEventDisableTiming));
  e_.reset(e);
}
void CudaEvent::record(cudaStream_t s) {
  SHARDPLAN_CUDA_CHECK(cudaEventRecord(get(), s));
}
bool CudaEvent::done() const {
  const cudaError_t status = cudaEventQuery(get());
  if (status == cudaErrorNotReady) return false;
  SHARDPLAN_CUDA_CHECK(status);
  return true;
}

void stream_wait(cudaStream_t waiter, cudaStream_t s, CudaEvent& scratch) {
  if (waiter == s) return;
  scratch.record(s);
  SHARDPLAN_CUDA_CHECK(cudaStreamWaitEvent(waiter, scratch.get(), 0));
}

CublasHandle::CublasHandle() {
  cublasHandle_t h = nullptr;
  SHARDPLAN_CUBLAS_CHECK(cublasCreate(&h));
  h_.reset(h);
}

}  // namespace shardplan
