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

std::vector<int> int_counts(const std::vector<int64_t>& counts) {
  std::vector<int> out;
  for (int64_t c : counts) out.push_back(to_int(c));
  return out;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

}  // namespace

std::vector<int64_t> FlatShards::counts_in(ElementRange range) const {
  std::vector<int64_t> counts;
  for (int i = 0; i < members; ++i) {
    const ElementRange s = split_range(total, members, i);
    counts.push_back(
        std::max<int64_t>(0, std::min(s.end, range.end) - std::max(s.begin, range.begin)));
  }
  return counts;
}

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
  timed(Collective::all_gather, [&] {
    const int n = to_int(static_cast<int64_t>(part.size()));
    MPI_Allgather(part.data(), n, MPI_FLOAT, full.data(), n, MPI_FLOAT, comm_);
  });
}

void MpiGroupComm::reduce_scatter(std::span<const float> full, std::span<float> part) {
  assert(full.size() == part.size() * static_cast<size_t>(size_));
  timed(Collective::reduce_scatter, [&] {
    reduce_scatter_equal(comm_, full.data(), part.data(), static_cast<int64_t>(part.size()), size_);
  });
}

void reduce_scatter_equal(MPI_Comm comm, const float* full, float* part, int64_t count, int n) {
  const std::vector<int> counts(static_cast<size_t>(n), to_int(count));
  MPI_Reduce_scatter(full, part, counts.data(), MPI_FLOAT, MPI_SUM, comm);
}

void MpiGroupComm::reduce_scatter_range(const FlatShards& s, ElementRange range, const float* in,
                                        float* part) {
  const std::vector<int> counts = int_counts(s.counts_in(range));
  // MPI_Reduce_scatter: uneven counts, member i receives counts[i] elements (MPI 4.0 §6.10.1).
  MPI_Reduce_scatter(in, part, counts.data(), MPI_FLOAT, MPI_SUM, comm_);
}

void MpiGroupComm::all_gather_range(const FlatShards& s, ElementRange range, const float* part,
                                    float* out) {
  const std::vector<int> counts = int_counts(s.counts_in(range));
  const std::vector<int> displs = displacements(counts);
  const auto me = static_cast<size_t>(s.index);
  const void* send = part == out + displs[me] ? MPI_IN_PLACE : part;
  MPI_Allgatherv(send, counts[me], MPI_FLOAT, out, counts.data(), displs.data(), MPI_FLOAT, comm_);
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
