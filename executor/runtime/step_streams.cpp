#include "executor/runtime/step_streams.h"

#include <mpi.h>

#include <cassert>

namespace shardplan {

void HostStreams::begin_step() {
  times_s_.clear();
  start_s_ = MPI_Wtime();
}

Stamp HostStreams::stamp() {
  times_s_.push_back(MPI_Wtime());
  return {static_cast<int32_t>(times_s_.size() - 1)};
}

double HostStreams::end_step() {
  return MPI_Wtime() - start_s_;
}

double HostStreams::seconds(Stamp s) const {
  assert(s.index >= 0 && static_cast<size_t>(s.index) < times_s_.size());
  return times_s_[static_cast<size_t>(s.index)] - start_s_;
}

}  // namespace shardplan
