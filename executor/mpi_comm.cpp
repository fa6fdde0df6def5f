#include "executor/mpi_comm.h"

#include <algorithm>
#include <cassert>

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

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
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

MpiTpComm::MpiTpComm(MPI_Comm comm, Group group) : comm_(comm), group_(group) {
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_rank(comm_, &rank_);
}

void MpiTpComm::all_reduce(std::span<float> x, ReduceOp op) {
  const double start = MPI_Wtime();
  MPI_Allreduce(MPI_IN_PLACE, x.data(), to_int(static_cast<int64_t>(x.size())), MPI_FLOAT,
                op == ReduceOp::sum ? MPI_SUM : MPI_MAX, comm_);
  if (calls != nullptr) calls->push_back({Collective::all_reduce, group_, start, MPI_Wtime()});
}

void MpiTpComm::all_gather(std::span<const float> part, std::span<float> full) {
  assert(full.size() == part.size() * static_cast<size_t>(size_));
  const double start = MPI_Wtime();
  const int n = to_int(static_cast<int64_t>(part.size()));
  MPI_Allgather(part.data(), n, MPI_FLOAT, full.data(), n, MPI_FLOAT, comm_);
  if (calls != nullptr) calls->push_back({Collective::all_gather, group_, start, MPI_Wtime()});
}

void MpiTpComm::reduce_scatter(std::span<const float> full, std::span<float> part) {
  assert(full.size() == part.size() * static_cast<size_t>(size_));
  const double start = MPI_Wtime();
  reduce_scatter_equal(comm_, full.data(), part.data(), static_cast<int64_t>(part.size()), size_);
  if (calls != nullptr) calls->push_back({Collective::reduce_scatter, group_, start, MPI_Wtime()});
}

std::vector<int> FlatShards::counts_in(ElementRange range) const {
  std::vector<int> counts;
  for (int i = 0; i < members; ++i) {
    const ElementRange s = split_range(total, members, i);
    counts.push_back(
        to_int(std::max<int64_t>(0, std::min(s.end, range.end) - std::max(s.begin, range.begin))));
  }
  return counts;
}

void reduce_scatter_equal(MPI_Comm comm, const float* full, float* part, int64_t count, int n) {
  const std::vector<int> counts(static_cast<size_t>(n), to_int(count));
  MPI_Reduce_scatter(full, part, counts.data(), MPI_FLOAT, MPI_SUM, comm);
}

void all_reduce_sum(MPI_Comm comm, std::span<float> x) {
  MPI_Allreduce(MPI_IN_PLACE, x.data(), to_int(static_cast<int64_t>(x.size())), MPI_FLOAT, MPI_SUM,
                comm);
}

void reduce_scatter_range(MPI_Comm comm, const FlatShards& s, ElementRange range, const float* in,
                          float* part) {
  const std::vector<int> counts = s.counts_in(range);
  // MPI_Reduce_scatter: uneven counts, member i receives counts[i] elements (MPI 4.0 §6.10.1).
  MPI_Reduce_scatter(in, part, counts.data(), MPI_FLOAT, MPI_SUM, comm);
}

void all_gather_range(MPI_Comm comm, const FlatShards& s, ElementRange range, const float* part,
                      float* out) {
  const std::vector<int> counts = s.counts_in(range);
  const std::vector<int> displs = displacements(counts);
  const auto me = static_cast<size_t>(s.index);
  const void* send = part == out + displs[me] ? MPI_IN_PLACE : part;
  MPI_Allgatherv(send, counts[me], MPI_FLOAT, out, counts.data(), displs.data(), MPI_FLOAT, comm);
}

}  // namespace shardplan
