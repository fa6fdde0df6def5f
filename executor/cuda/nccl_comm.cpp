#include "executor/cuda/nccl_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

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

// The element types the executor moves; another reaching a collective is a bug.
ncclDataType_t nccl_type(Dtype type) {
  switch (type) {
    case Dtype::fp32:
      return ncclFloat32;
    case Dtype::bf16:
      return ncclBfloat16;
    default:
      throw std::logic_error(fmt::format("NCCL collectives move fp32 or bf16 elements, not {}",
                                         enum_name(type, kDtypeNames)));
  }
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
void NcclGroupComm::on_selected_stream_recorded(Collective op, int64_t bytes, Issue&& issue) {
  const Stamp start = streams_.stamp();
  on_selected_stream(issue);
  if (calls != nullptr) calls->push_back({op, group_, bytes, start, streams_.stamp()});
}

template <class Issue>
void NcclGroupComm::on_own_stream(Collective op, int64_t bytes, Issue&& issue) {
  const Stream was = streams_.selected();
  const Stamp ready = streams_.stamp();
  streams_.select(own_);
  streams_.wait(ready);
  const Stamp start = streams_.stamp();
  on_selected_stream(issue);
  const Stamp end = streams_.stamp();
  streams_.select(was);
  streams_.wait(end);
  if (calls != nullptr) calls->push_back({op, group_, bytes, start, end});
}

void NcclGroupComm::all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) {
  const Collective c = Collective::all_reduce;
  on_own_stream(c, call_bytes(c, count, type, comm_.size()), [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclAllReduce(x, x, count_of(count), nccl_type(type), nccl_op(op), comm_.get(), s));
  });
}

void NcclGroupComm::all_gather(const void* part, void* full, int64_t count, Dtype type) {
  const Collective c = Collective::all_gather;
  on_own_stream(c, call_bytes(c, count, type, comm_.size()), [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclAllGather(part, full, count_of(count), nccl_type(type), comm_.get(), s));
  });
}

void NcclGroupComm::reduce_scatter(const void* full, void* part, int64_t count, Dtype type) {
  const Collective c = Collective::reduce_scatter;
  on_own_stream(c, call_bytes(c, count, type, comm_.size()), [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclReduceScatter(full, part, count_of(count), nccl_type(type), ncclSum, comm_.get(), s));
  });
}

void NcclGroupComm::reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) {
  const Collective c = Collective::reduce_scatter;
  on_selected_stream_recorded(c, call_bytes(c, count, type, comm_.size()), [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclReduceScatter(in, part, count_of(count), nccl_type(type), ncclSum, comm_.get(), s));
  });
}

void NcclGroupComm::all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) {
  const Collective c = Collective::all_gather;
  on_selected_stream_recorded(c, call_bytes(c, count, type, comm_.size()), [&](cudaStream_t s) {
    SHARDPLAN_NCCL_CHECK(
        ncclAllGather(part, out, count_of(count), nccl_type(type), comm_.get(), s));
  });
}

}  // namespace shardplan
