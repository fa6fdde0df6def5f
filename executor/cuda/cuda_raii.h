// RAII owners of CUDA's handles (NVTX/CUTLASS style): a stream, an event, a cuBLAS handle. Each
// is created checked, destroyed with its owner, movable and not copyable.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <type_traits>

namespace shardplan {

// One of CUDA's pointer-typed handles owned by a std::unique_ptr that calls `destroy` on it. A
// failure to destroy is ignored: the process is ending or the device is already lost, and the
// error that caused it has been reported.
template <class Handle, auto destroy>
struct HandleDestroyer {
  void operator()(Handle h) const { static_cast<void>(destroy(h)); }
};
template <class Handle, auto destroy>
using UniqueHandle =
    std::unique_ptr<std::remove_pointer_t<Handle>, HandleDestroyer<Handle, destroy>>;

// A stream that does not synchronise with the legacy default stream.
class CudaStream {
 public:
  CudaStream();
  cudaStream_t get() const { return s_.get(); }

 private:
  UniqueHandle<cudaStream_t, cudaStreamDestroy> s_;
};

// Timing events record when their stream reached them (cudaEventElapsedTime); ordering-only
// events are cheaper and order streams (cudaStreamWaitEvent).
enum class EventKind { timing, ordering };

class CudaEvent {
 public:
  explicit CudaEvent(EventKind kind = EventKind::ordering);
  cudaEvent_t get() const { return e_.get(); }
  void record(cudaStream_t s);
  bool done() const;  // cudaEventQuery: the stream has passed it

 private:
  UniqueHandle<cudaEvent_t, cudaEventDestroy> e_;
};

// `waiter` runs nothing further until `s` has passed everything issued to it so far.
void stream_wait(cudaStream_t waiter, cudaStream_t s, CudaEvent& scratch);

class CublasHandle {
 public:
  CublasHandle();
  cublasHandle_t get() const { return h_.get(); }

 private:
  UniqueHandle<cublasHandle_t, cublasDestroy> h_;
};

}  // namespace shardplan
