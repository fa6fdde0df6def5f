// A rank's pipeline sends and receives (the program's send and recv actions): a send may complete
// after it is issued and owns its message until then; a receive is complete for the work issued
// after it (at once on a CPU; on a GPU, for work on the stream that waits for it). Messages are
// bytes (an activation or its gradient, in the run's storage type). MpiP2p (mpi_comm.h) and
// NcclP2p (cuda/nccl_p2p.h) provide them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/schedule.h"
#include "executor/state/tensor_allocator.h"

namespace shardplan {

class PipelineP2p {
 public:
  virtual ~PipelineP2p() = default;
  // `message` to world rank `peer`; `tag` is the program's message id, `pass` the direction.
  virtual void send(Buffer<std::byte> message, int64_t peer, int64_t tag, Pass pass) = 0;
  virtual void recv(void* into, int64_t bytes, int64_t peer, int64_t tag, Pass pass) = 0;
  // Frees the messages of the sends that have completed; with `wait`, of all of them.
  virtual void finish_sends(bool wait) = 0;
};

}  // namespace shardplan
