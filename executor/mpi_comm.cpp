#include "executor/mpi_comm.h"

#include <algorithm>
#include <cassert>
#include <climits>

namespace shardplan {

namespace {

int to_int(int64_t n) {
  assert(n >= 0 && n <= INT32_MAX);
  return static_cast<int>(n);
}

// A group's communicator: colour = its smallest member, key = the position in the group.
MPI_Comm split(const std::vector<int64_t>& members, int64_t rank) {
  int colour = MPI_UNDEFINED, key = 0;
  const auto it = std::find(members.begin(), members.end(), rank);
  if (it != members.end()) {
    colour = to_int(*std::min_element(members.begin(), members.end()));
    key = static_cast<int>(it - members.begin());
  }
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, colour, key, &comm);
  return comm;
}

}  // namespace

MpiGroups::MpiGroups(const Program& p) {
  for (const auto& [g, name] : kGroupNames)
    comms_[static_cast<size_t>(g)] = split(p.groups[static_cast<size_t>(g)], p.rank);
  embedding_ = split(p.embedding_group, p.rank);
}

MpiGroups::~MpiGroups() {
  for (MPI_Comm& c : comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  if (embedding_ != MPI_COMM_NULL) MPI_Comm_free(&embedding_);
}

MpiGroupComm::MpiGroupComm(MPI_Comm comm, Group group, StepStreams& streams)
    : comm_(comm), group_(group), streams_(streams) {
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_rank(comm_, &rank_);
}

template <class Call>
void MpiGroupComm::timed(Collective op, Call&& call) {
  if (calls == nullptr) return call();
  const Stamp start = streams_.stamp();
  call();
  calls->push_back({op, group_, start, streams_.stamp()});
}

void MpiGroupComm::all_reduce(std::span<float> x, ReduceOp op) {
  timed(Collective::all_reduce, [&] {
    MPI_Allreduce(MPI_IN_PLACE, x.data(), to_int(static_cast<int64_t>(x.size())), MPI_FLOAT,
                  op == ReduceOp::sum ? MPI_SUM : MPI_MAX, comm_);
  });
}

void MpiGroupComm::all_gather(std::span<const float> part, std::span<float> full) {
  assert(full.size() == part.size() * static_cast<size_t>(size_));
  timed(Collective::all_gather,
        [&] { all_gather_blocks(part.data(), full.data(), static_cast<int64_t>(part.size())); });
}

void MpiGroupComm::reduce_scatter(std::span<const float> full, std::span<float> part) {
  assert(full.size() == part.size() * static_cast<size_t>(size_));
  timed(Collective::reduce_scatter, [&] {
    reduce_scatter_blocks(full.data(), part.data(), static_cast<int64_t>(part.size()));
  });
}

void reduce_scatter_equal(MPI_Comm comm, const float* full, float* part, int64_t count, int n) {
  const std::vector<int> counts(static_cast<size_t>(n), to_int(count));
  MPI_Reduce_scatter(full, part, counts.data(), MPI_FLOAT, MPI_SUM, comm);
}

void MpiGroupComm::reduce_scatter_blocks(const float* in, float* part, int64_t count) {
  reduce_scatter_equal(comm_, in, part, count, size_);
}

void MpiGroupComm::all_gather_blocks(const float* part, float* out, int64_t count) {
  const void* send = part == out + rank_ * count ? MPI_IN_PLACE : part;
  MPI_Allgather(send, to_int(count), MPI_FLOAT, out, to_int(count), MPI_FLOAT, comm_);
}

void MpiP2p::send(Buffer<float> message, int64_t peer, int64_t tag, Pass) {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Isend(message.data(), to_int(message.size()), MPI_FLOAT, to_int(peer),
            static_cast<int>(tag % 32768), MPI_COMM_WORLD, &r);
  sends_.emplace_back(r, std::move(message));
}

void MpiP2p::recv(float* into, int64_t count, int64_t peer, int64_t tag, Pass) {
  MPI_Recv(into, to_int(count), MPI_FLOAT, to_int(peer), static_cast<int>(tag % 32768),
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void MpiP2p::finish_sends(bool wait) {
  std::erase_if(sends_, [&](auto& s) {
    int done = 0;
    if (wait)
      MPI_Wait(&s.first, MPI_STATUS_IGNORE), done = 1;
    else
      MPI_Test(&s.first, &done, MPI_STATUS_IGNORE);
    return done != 0;
  });
}

}  // namespace shardplan
