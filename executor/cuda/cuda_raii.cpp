#include "executor/cuda/cuda_raii.h"

#include "executor/cuda/cuda_check.h"

namespace shardplan {

// Destructors do not throw: a failure to destroy a handle is ignored (the process is ending or the
// device is already lost, and the error that caused it has been reported).

CudaStream::CudaStream() {
  SHARDPLAN_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
CudaStream::~CudaStream() {
  if (s_ != nullptr) cudaStreamDestroy(s_);
}

CudaEvent::CudaEvent(EventKind kind) {
  SHARDPLAN_CUDA_CHECK(cudaEventCreateWithFlags(
      &e_, kind == EventKind::timing ? cudaEventDefault : cudaEventDisableTiming));
}
CudaEvent::~CudaEvent() {
  if (e_ != nullptr) cudaEventDestroy(e_);
}
void CudaEvent::record(cudaStream_t s) {
  SHARDPLAN_CUDA_CHECK(cudaEventRecord(e_, s));
}
bool CudaEvent::done() const {
  const cudaError_t status = cudaEventQuery(e_);
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
  SHARDPLAN_CUBLAS_CHECK(cublasCreate(&h_));
}
CublasHandle::~CublasHandle() {
  if (h_ != nullptr) cublasDestroy(h_);
}

}  // namespace shardplan
