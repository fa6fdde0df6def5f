#include "executor/cuda/nccl_p2p.h"

#include <mpi.h>

#include <cassert>
#include <stdexcept>

#include "executor/cuda/cuda_check.h"

namespace shardplan {

namespace {

// MPI tags of the unique ids, one per pass (a pair of ranks may share a link each way per pass).
int id_tag(Pass pass) {
  return pass == Pass::forward ? 7101 : 7102;
}

}  // namespace

NcclP2p::NcclP2p(const Program& p, CudaContext& ctx) : ctx_(ctx) {
  const std::vector<PipelineChannel> channels = pipeline_channels(p);
  // The sending end makes each link's id and sends it to the receiving end; all sends are posted
  // before any receive, so no rank waits on another's order.
  std::vector<ncclUniqueId> ids(channels.size());
  std::vector<MPI_Request> requests;
  for (size_t i = 0; i < channels.size(); ++i) {
    if (channels[i].direction != Direction::send) continue;
    SHARDPLAN_NCCL_CHECK(ncclGetUniqueId(&ids[i]));
    requests.emplace_back();
    MPI_Isend(&ids[i], static_cast<int>(sizeof(ncclUniqueId)), MPI_BYTE,
              static_cast<int>(channels[i].peer), id_tag(channels[i].pass), MPI_COMM_WORLD,
              &requests.back());
  }
  for (size_t i = 0; i < channels.size(); ++i)
    if (channels[i].direction == Direction::recv)
      MPI_Recv(&ids[i], static_cast<int>(sizeof(ncclUniqueId)), MPI_BYTE,
               static_cast<int>(channels[i].peer), id_tag(channels[i].pass), MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  // Every link's ncclCommInitRank in one NCCL group: a rank joins up to four links, each of which
  // completes only when both ends have joined.
  SHARDPLAN_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < channels.size(); ++i)
    links_.push_back(
        {channels[i],
         std::make_unique<NcclComm>(ids[i], 2, channels[i].direction == Direction::send ? 0 : 1),
         CudaStream{}});
  SHARDPLAN_NCCL_CHECK(ncclGroupEnd());
}

NcclP2p::~NcclP2p() {
  if (!sends_.empty()) cudaDeviceSynchronize();  // the messages are freed below
}

NcclP2p::Link& NcclP2p::link(Direction d, Pass pass, int64_t peer) {
  for (Link& l : links_)
    if (l.channel == PipelineChannel{d, pass, peer}) return l;
  throw std::logic_error("no pipeline link for this message");  // pipeline_channels covers all
}

void NcclP2p::send(Buffer<std::byte> message, int64_t peer, int64_t, Pass pass) {
  Link& l = link(Direction::send, pass, peer);
  ctx_.wait(l.stream.get(), ctx_.stream());
  SHARDPLAN_NCCL_CHECK(ncclSend(message.data(), static_cast<size_t>(message.bytes()), ncclUint8, 1,
                                l.comm->get(), l.stream.get()));
  CudaEvent sent;
  sent.record(l.stream.get());
  sends_.emplace_back(std::move(sent), std::move(message));
}

void NcclP2p::recv(void* into, int64_t bytes, int64_t peer, int64_t, Pass pass) {
  Link& l = link(Direction::recv, pass, peer);
  ctx_.wait(l.stream.get(), ctx_.stream());
  SHARDPLAN_NCCL_CHECK(
      ncclRecv(into, static_cast<size_t>(bytes), ncclUint8, 0, l.comm->get(), l.stream.get()));
  ctx_.wait(ctx_.stream(), l.stream.get());
}

void NcclP2p::finish_sends(bool wait) {
  std::erase_if(sends_, [&](auto& s) {
    if (wait) SHARDPLAN_CUDA_CHECK(cudaEventSynchronize(s.first.get()));
    return wait || s.first.done();
  });
}

}  // namespace shardplan
