// The CUDA backend's pipeline sends and receives (executor/runtime/pipeline_p2p.h) over the rank's
// pipeline links (executor/runtime/pipeline_channels.h): each link a two-rank NCCL communicator
// (rank 0 sends, rank 1 receives) with a stream of its own. A send waits for the selected stream
// (the pp-comm stream, already past the action's dependencies) and keeps its message until its
// link's stream has passed it; a receive waits for the selected stream, and the selected stream
// then waits for the receive. Messages are bytes (ncclUint8), whatever their elements.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "executor/cuda/cuda_context.h"
#include "executor/cuda/nccl_comm.h"
#include "executor/runtime/pipeline_channels.h"
#include "executor/runtime/pipeline_p2p.h"

namespace shardplan {

class NcclP2p final : public PipelineP2p {
 public:
  // Collective over MPI_COMM_WORLD: every rank creates its links' communicators at once.
  NcclP2p(const Program& p, CudaContext& ctx);
  ~NcclP2p() override;

  void send(Buffer<std::byte> message, int64_t peer, int64_t tag, Pass pass) override;
  void recv(void* into, int64_t bytes, int64_t peer, int64_t tag, Pass pass) override;
  void finish_sends(bool wait) override;

 private:
  struct Link {
    PipelineChannel channel;
    std::unique_ptr<NcclComm> comm;
    CudaStream stream;
  };
  Link& link(Direction d, Pass pass, int64_t peer);

  CudaContext& ctx_;
  std::vector<Link> links_;
  std::vector<std::pair<CudaEvent, Buffer<std::byte>>> sends_;
};

}  // namespace shardplan
