// The CUDA backend's StepStreams (executor/runtime/step_streams.h): the compute stream is the
// context's, each other program stream a CUDA stream of its own; a stamp is a timing event recorded
// on the selected stream, a wait cudaStreamWaitEvent on it, and seconds are cudaEventElapsedTime
// from the step's start event, so CUDA events time every action.
#pragma once

#include <array>
#include <vector>

#include "executor/cuda/cuda_context.h"
#include "executor/runtime/step_streams.h"

namespace shardplan {

class CudaStreams final : public StepStreams {
 public:
  explicit CudaStreams(CudaContext& ctx);

  void begin_step() override;
  void select(Stream s) override;
  Stream selected() const override { return selected_; }
  Stamp stamp() override;
  void wait(Stamp s) override;
  double end_step() override;
  double seconds(Stamp s) const override;

  cudaStream_t stream(Stream s) const;

 private:
  CudaContext& ctx_;
  std::array<CudaStream, kNumStreams> side_;  // [compute] unused: the context's compute stream
  Stream selected_ = Stream::compute;
  CudaEvent start_{EventKind::timing}, end_{EventKind::timing};
  std::vector<CudaEvent> events_;  // reused step after step
  size_t used_ = 0;
};

}  // namespace shardplan
