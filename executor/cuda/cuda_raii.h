// RAII owners of CUDA's handles (NVTX/CUTLASS style): a stream, an event, a cuBLAS handle. Each
// is created checked, destroyed in its destructor, movable and not copyable.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <utility>

namespace shardplan {

// A stream that does not synchronise with the legacy default stream.
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  CudaStream(CudaStream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  CudaStream& operator=(CudaStream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Timing events record when their stream reached them (cudaEventElapsedTime); ordering-only
// events are cheaper and order streams (cudaStreamWaitEvent).
enum class EventKind { timing, ordering };

class CudaEvent {
 public:
  explicit CudaEvent(EventKind kind = EventKind::ordering);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CudaEvent(CudaEvent&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s);
  bool done() const;  // cudaEventQuery: the stream has passed it

 private:
  cudaEvent_t e_ = nullptr;
};

// `waiter` runs nothing further until `s` has passed everything issued to it so far.
void stream_wait(cudaStream_t waiter, cudaStream_t s, CudaEvent& scratch);

class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  CublasHandle(CublasHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace shardplan
