// A rank's streams during one step (core/schedule.h's Stream: compute, tp-comm, dp-comm, ...) and
// the stamps that time and order its actions. The interpreter selects an action's stream, makes it
// wait for the stamps of the action's dependencies on other streams, and stamps the action's start
// and end there; after the step, every stamp reads back as seconds from the step's start.
// HostStreams runs everything in program order on the calling thread (stamps are wall-clock
// readings, waits are already met); the CUDA backend's streams are CUDA streams and its stamps
// CUDA events (cuda/cuda_streams.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/schedule.h"

namespace shardplan {

// A point on one stream; valid until the next begin_step.
struct Stamp {
  int32_t index = -1;
};

class StepStreams {
 public:
  virtual ~StepStreams() = default;
  // Every stream idle; the step's clock starts.
  virtual void begin_step() = 0;
  // Where the next kernels, copies and collectives go.
  virtual void select(Stream s) = 0;
  virtual Stream selected() const = 0;
  // The selected stream's point after everything issued to it so far.
  virtual Stamp stamp() = 0;
  // The selected stream runs nothing more until `s` is reached.
  virtual void wait(Stamp s) = 0;
  // Waits for every stream; returns the seconds since begin_step.
  virtual double end_step() = 0;
  // After end_step: when the stream reached `s`, in seconds from the step's start.
  virtual double seconds(Stamp s) const = 0;
};

// One thread, program order: a stamp is MPI_Wtime() when it is taken.
class HostStreams final : public StepStreams {
 public:
  void begin_step() override;
  void select(Stream s) override { selected_ = s; }
  Stream selected() const override { return selected_; }
  Stamp stamp() override;
  void wait(Stamp) override {}
  double end_step() override;
  double seconds(Stamp s) const override;

 private:
  Stream selected_ = Stream::compute;
  double start_s_ = 0;
  std::vector<double> times_s_;
};

}  // namespace shardplan
