#include "executor/cuda/cuda_streams.h"

#include <cassert>

#include "executor/cuda/cuda_check.h"
#include "executor/runtime/wait_scope.h"

namespace shardplan {

CudaStreams::CudaStreams(CudaContext& ctx) : ctx_(ctx) {}

cudaStream_t CudaStreams::stream(Stream s) const {
  return s == Stream::compute ? ctx_.compute() : side_[static_cast<size_t>(s)].get();
}

void CudaStreams::begin_step() {
  SHARDPLAN_CUDA_CHECK(cudaDeviceSynchronize());
  used_ = 0;
  start_.record(ctx_.compute());
  for (size_t s = 1; s < side_.size(); ++s)
    SHARDPLAN_CUDA_CHECK(cudaStreamWaitEvent(side_[s].get(), start_.get(), 0));
  select(Stream::compute);
}

void CudaStreams::select(Stream s) {
  selected_ = s;
  ctx_.select(stream(s));
}

Stamp CudaStreams::stamp() {
  if (used_ == events_.size()) events_.emplace_back(EventKind::timing);
  events_[used_].record(ctx_.stream());
  return {static_cast<int32_t>(used_++)};
}

void CudaStreams::wait(Stamp s) {
  assert(s.index >= 0 && static_cast<size_t>(s.index) < used_);
  SHARDPLAN_CUDA_CHECK(
      cudaStreamWaitEvent(ctx_.stream(), events_[static_cast<size_t>(s.index)].get(), 0));
}

double CudaStreams::end_step() {
  for (size_t s = 1; s < side_.size(); ++s) ctx_.wait(ctx_.compute(), side_[s].get());
  end_.record(ctx_.compute());
  {
    const WaitScope wait({WaitKind::device, "device", {}, 0});
    SHARDPLAN_CUDA_CHECK(cudaEventSynchronize(end_.get()));
  }
  float ms = 0;
  SHARDPLAN_CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), end_.get()));
  select(Stream::compute);
  return ms / 1e3;
}

double CudaStreams::seconds(Stamp s) const {
  assert(s.index >= 0 && static_cast<size_t>(s.index) < used_);
  float ms = 0;
  SHARDPLAN_CUDA_CHECK(
      cudaEventElapsedTime(&ms, start_.get(), events_[static_cast<size_t>(s.index)].get()));
  return ms / 1e3;
}

}  // namespace shardplan
