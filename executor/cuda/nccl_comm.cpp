#include "executor/cuda/nccl_comm.h"

#include <algorithm>
#include <cassert>

#include "executor/cuda/cuda_check.h"

namespace shardplan {

namespace {

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::sum ? ncclSum : ncclMax;
}

size_t count_of(int64_t n) {
  assert(n >= 0);
  return static_cast<size_t>(n);
}

bool all_equal(const std::vector<int64_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

// One call per member with elements in `counts` (its count, and the offset of its part: parts
// follow one another in member order), all in one NCCL group.
template <class PerMember>
void per_member(const std::vector<int64_t>& counts, PerMember&& call) {
  SHARDPLAN_NCCL_CHECK(ncclGroupStart());
  int64_t offset = 0;
  for (size_t member = 0; member < counts.size(); ++member) {
    if (counts[member] > 0) call(static_cast<int>(member), offset, count_of(counts[member]));
    offset += counts[member];
  }
  SHARDPLAN_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace

NcclComm::NcclComm(MPI_Comm group) {
  if (group == MPI_COMM_NULL) return;
  MPI_Comm_size(group, &size_);
  MPI_Comm_rank(group, &rank_);
  ncclUniqueId id{};
  if (rank_ == 0) SHARDPLAN_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, group);
  SHARDPLAN_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclComm::NcclComm(ncclUniqueId id, int size, int rank) : size_(size), rank_(rank) {
  SHARDPLAN_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclComm::~NcclComm() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);  // not checked: the process may be failing
}

void NcclComm::before_call(cudaStream_t stream) {
  if (called_) SHARDPLAN_CUDA_CHECK(cudaStreamWaitEvent(stream, last_.get(), 0));
}

void NcclComm::after_call(cudaStream_t stream) {
  last_.record(stream);
  called_ = true;
}

NcclGroupComm::NcclGroupComm(NcclComm& comm, Group group, Stream own, CudaContext& ctx,
                             StepStreams& streams)
    : comm_(comm), group_(group), own_(own), ctx_(ctx), streams_(streams) {}

template <class Issue>
void NcclGroupComm::on_selected_stream(Issue&& issue) {
  const cudaStream_t s = ctx_.stream();
  comm_.before_call(s);
  issue(s);
  comm_.after_call(s);
}

template <class Issue>
void NcclGroupComm::on_own_stream(Collective op, Issue&& issue) {
  const Stream was = streams_.selected();
  const Stamp ready = streams_.stamp();
  streams_.select(own_);
  streams_.wait(ready);
  const Stamp start = streams_.stamp();
  on_selected_stream(issue);
  const Stamp end = streams_.stamp();
  streams_.select(was);
  streams_.wait(end);
  if (calls != nullptr) calls->push_back({op, group_, start, end});
}

void NcclGroupComm::all_reduce(std::span<float> x, ReduceOp op) {
  on_own_stream(Collective::all_reduce, [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, nccl_op(op), comm_.get(), s));
  });
}

void NcclGroupComm::all_gather(std::span<const float> part, std::span<float> full) {
  assert(full.size() == part.size() * static_cast<size_t>(size()));
  on_own_stream(Collective::all_gather, [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclAllGather(part.data(), full.data(), part.size(), ncclFloat, comm_.get(), s));
  });
}

void NcclGroupComm::reduce_scatter(std::span<const float> full, std::span<float> part) {
  assert(full.size() == part.size() * static_cast<size_t>(size()));
  on_own_stream(Collective::reduce_scatter, [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(ncclReduceScatter(full.data(), part.data(), part.size(), ncclFloat,
                                           ncclSum, comm_.get(), s));
  });
}

void NcclGroupComm::reduce_scatter_range(const FlatShards& sh, ElementRange range, const float* in,
                                         float* part) {
  const std::vector<int64_t> counts = sh.counts_in(range);
  on_selected_stream([&](cudaStream_t s) {
    if (all_equal(counts)) {
      SHARDPLAN_NCCL_CHECK(
          ncclReduceScatter(in, part, count_of(counts[0]), ncclFloat, ncclSum, comm_.get(), s));
      return;
    }
    per_member(counts, [&](int member, int64_t offset, size_t n) {
      SHARDPLAN_NCCL_CHECK(ncclReduce(in + offset, member == sh.index ? part : nullptr, n,
                                      ncclFloat, ncclSum, member, comm_.get(), s));
    });
  });
}

void NcclGroupComm::all_gather_range(const FlatShards& sh, ElementRange range, const float* part,
                                     float* out) {
  const std::vector<int64_t> counts = sh.counts_in(range);
  on_selected_stream([&](cudaStream_t s) {
    if (all_equal(counts)) {
      SHARDPLAN_NCCL_CHECK(
          ncclAllGather(part, out, count_of(counts[0]), ncclFloat, comm_.get(), s));
      return;
    }
    per_member(counts, [&](int member, int64_t offset, size_t n) {
      SHARDPLAN_NCCL_CHECK(ncclBroadcast(member == sh.index ? part : out + offset, out + offset, n,
                                         ncclFloat, member, comm_.get(), s));
    });
  });
}

}  // namespace shardplan
