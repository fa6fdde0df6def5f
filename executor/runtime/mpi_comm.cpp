#include "executor/runtime/mpi_comm.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

#include "executor/bf16.h"
#include "executor/runtime/wait_scope.h"

namespace shardplan {

namespace {

// MPI counts are ints (MPI 4.1's large-count _c calls are not in Open MPI 4.1): a larger count
// is refused rather than cut short.
int to_int(int64_t n) {
  if (n < 0 || n > INT32_MAX)
    throw std::length_error("an MPI count of " + std::to_string(n) + " exceeds MPI's int counts");
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

MpiGroupComm::MpiGroupComm(MPI_Comm comm, Group group, std::string label, StepStreams& streams)
    : comm_(comm), group_(group), label_(std::move(label)), streams_(streams) {
  MPI_Comm_size(comm_, &size_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(comm_, &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> positions(static_cast<size_t>(size_));
  std::iota(positions.begin(), positions.end(), 0);
  members_.resize(positions.size());
  MPI_Group_translate_ranks(mine, size_, positions.data(), world, members_.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
}

namespace {

// bf16's sum and max over MPI: each pair of elements in fp32, the result rounded once (bf16.h), as
// NCCL's bf16 reductions add. The signature is MPI_User_function's (MPI 4.1 §6.9.5).
template <class Combine>
void combine_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const bf16*>(in);
  auto* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Combine{}(float(a[i]), float(b[i]));
}
struct Add {
  float operator()(float a, float b) const { return a + b; }
};
struct Max {
  float operator()(float a, float b) const { return std::max(a, b); }
};

// MPI has no bfloat16 (MPI 4.1 §3.2.2 lists none): its elements travel as a committed pair of
// bytes. Made on first use, after MPI_Init, and kept until the process ends.
struct MpiBf16 {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op sum = MPI_OP_NULL, max = MPI_OP_NULL;
  MpiBf16() {
    MPI_Type_contiguous(static_cast<int>(sizeof(bf16)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
    MPI_Op_create(&combine_bf16<Add>, /*commute=*/1, &sum);
    MPI_Op_create(&combine_bf16<Max>, /*commute=*/1, &max);
  }
};
const MpiBf16& mpi_bf16() {
  static const MpiBf16 types;
  return types;
}

[[noreturn]] void unsupported(Dtype type) {
  throw std::logic_error("the executor's collectives do not move " +
                         std::string(enum_name(type, kDtypeNames)));
}

}  // namespace

MPI_Datatype mpi_datatype(Dtype type) {
  if (type == Dtype::fp32) return MPI_FLOAT;
  if (type == Dtype::bf16) return mpi_bf16().type;
  unsupported(type);
}

MPI_Op mpi_op(Dtype type, ReduceOp op) {
  if (type == Dtype::fp32) return op == ReduceOp::sum ? MPI_SUM : MPI_MAX;
  if (type == Dtype::bf16) return op == ReduceOp::sum ? mpi_bf16().sum : mpi_bf16().max;
  unsupported(type);
}

namespace {

WaitKind wait_kind(Collective op) {
  switch (op) {
    case Collective::all_reduce:
      return WaitKind::all_reduce;
    case Collective::all_gather:
      return WaitKind::all_gather;
    case Collective::reduce_scatter:
      return WaitKind::reduce_scatter;
    case Collective::broadcast:
      return WaitKind::broadcast;
    case Collective::all_to_all:
    case Collective::send_recv:
      break;
  }
  throw std::logic_error("the CPU backend's groups run no " +
                         std::string(enum_name(op, kCollectiveNames)));
}

}  // namespace

template <class Call>
void MpiGroupComm::timed(Collective op, int64_t bytes, Call&& call) {
  const WaitScope wait({wait_kind(op), label_, members_, ++calls_made_});
  if (calls == nullptr) return call();
  const Stamp start = streams_.stamp();
  call();
  calls->push_back({op, group_, bytes, start, streams_.stamp()});
}

void MpiGroupComm::all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) {
  const Collective c = Collective::all_reduce;
  timed(c, call_bytes(c, count, type, size_), [&] {
    MPI_Allreduce(MPI_IN_PLACE, x, to_int(count), mpi_datatype(type), mpi_op(type, op), comm_);
  });
}

void MpiGroupComm::all_gather(const void* part, void* full, int64_t count, Dtype type) {
  const Collective c = Collective::all_gather;
  timed(c, call_bytes(c, count, type, size_), [&] { gather_blocks(part, full, count, type); });
}

void MpiGroupComm::reduce_scatter(const void* full, void* part, int64_t count, Dtype type) {
  const Collective c = Collective::reduce_scatter;
  timed(c, call_bytes(c, count, type, size_),
        [&] { reduce_scatter_equal(comm_, full, part, count, size_, type); });
}

void reduce_scatter_equal(MPI_Comm comm, const void* full, void* part, int64_t count, int n,
                          Dtype type) {
  const std::vector<int> counts(static_cast<size_t>(n), to_int(count));
  MPI_Reduce_scatter(full, part, counts.data(), mpi_datatype(type), mpi_op(type, ReduceOp::sum),
                     comm);
}

void MpiGroupComm::reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) {
  const Collective c = Collective::reduce_scatter;
  timed(c, call_bytes(c, count, type, size_),
        [&] { reduce_scatter_equal(comm_, in, part, count, size_, type); });
}

void MpiGroupComm::all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) {
  const Collective c = Collective::all_gather;
  timed(c, call_bytes(c, count, type, size_), [&] { gather_blocks(part, out, count, type); });
}

void MpiGroupComm::gather_blocks(const void* part, void* out, int64_t count, Dtype type) {
  const int64_t block_bytes = count * dtype_bytes(type);
  const void* send =
      part == static_cast<const std::byte*>(out) + rank_ * block_bytes ? MPI_IN_PLACE : part;
  const MPI_Datatype t = mpi_datatype(type);
  MPI_Allgather(send, to_int(count), t, out, to_int(count), t, comm_);
}

void MpiP2p::send(Buffer<std::byte> message, int64_t peer, int64_t tag, Pass) {
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Isend(message.data(), to_int(message.size()), MPI_BYTE, to_int(peer),
            static_cast<int>(tag % 32768), MPI_COMM_WORLD, &r);
  sends_.push_back({r, std::move(message), static_cast<int>(peer)});
}

void MpiP2p::recv(void* into, int64_t bytes, int64_t peer, int64_t tag, Pass) {
  const WaitScope wait({WaitKind::recv, "pipeline", {static_cast<int>(peer)}, 0});
  MPI_Recv(into, to_int(bytes), MPI_BYTE, to_int(peer), static_cast<int>(tag % 32768),
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void MpiP2p::finish_sends(bool wait) {
  std::erase_if(sends_, [&](Send& s) {
    int done = 0;
    if (wait) {
      const WaitScope scope({WaitKind::send, "pipeline", {s.peer}, 0});
      MPI_Wait(&s.request, MPI_STATUS_IGNORE);
      done = 1;
    } else {
      MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    }
    return done != 0;
  });
}

}  // namespace shardplan
