// A parallel group's collectives as a rank's layers and interpreter call them: the tensor- and
// context-parallel ones inside a layer's pass (TpComm, each call stamped so the interpreter can
// time it as its own action), and ZeRO's over one unit of a flat buffer, sharded evenly
// (zero_shards.h). MpiGroupComm (mpi_comm.h) and NcclGroupComm (cuda/nccl_comm.h) provide them;
// both run on the stream the rank's StepStreams selected (the layers' collectives on their own
// tp-comm or cp-comm stream).
//
// A backend implements each collective once for every element type the executor moves (fp32, and
// bf16 under mixed precision: MPI with a datatype and sum of its own, NCCL's ncclBfloat16), as
// MPI and NCCL themselves take a datatype; the typed calls and the layers' TpComm<T> forward to
// them.
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
#include <vector>

#include "core/collective.h"
#include "core/dtype.h"
#include "core/placement.h"
#include "executor/bf16.h"
#include "executor/layers/tp_comm.h"
#include "executor/runtime/step_streams.h"
#include "executor/state/param_layout.h"

namespace shardplan {

// One tp or cp collective as it ran: its kind, group, size (as a program's Action counts it) and
// stamps at its start and end.
struct TimedCall {
  Collective op = Collective::all_reduce;
  Group group = Group::tp;
  int64_t bytes = 0;
  Stamp start, end;
};

// A layers' call's size as core/schedule.h's Action::bytes counts it (nccl-tests' size: one
// member's whole buffer), from `count` elements of `type` at the call (the part of an all-gather
// or a reduce-scatter) over `members` ranks.
constexpr int64_t call_bytes(Collective op, int64_t count, Dtype type, int members) {
  const int64_t whole = op == Collective::all_reduce ? count : count * members;
  return whole * dtype_bytes(type);
}

class GroupComm {
 public:
  GroupComm() = default;
  GroupComm(const GroupComm&) = delete;
  GroupComm& operator=(const GroupComm&) = delete;
  virtual ~GroupComm() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;

  // The collectives on `count` elements of `type` (fp32 or bf16) at device pointers. The layers'
  // (stamped, TpComm's semantics): in place over every member...
  virtual void all_reduce(void* x, int64_t count, Dtype type, ReduceOp op) = 0;
  // ... full (size()·count) = the members' parts (count each) in rank order ...
  virtual void all_gather(const void* part, void* full, int64_t count, Dtype type) = 0;
  // ... part (count) = this rank's block of the element-wise sum of every member's full.
  virtual void reduce_scatter(const void* full, void* part, int64_t count, Dtype type) = 0;
  // ZeRO's over a unit, with `count` elements on every member: `in` (size()·count elements)
  // summed over the members, this rank's block of the sum written to `part` (count elements)...
  virtual void reduce_scatter_blocks(const void* in, void* part, int64_t count, Dtype type) = 0;
  // ... and every member's block (count elements, this rank's at `part`, which may be its own
  // block of `out`) gathered into `out` (size()·count elements).
  virtual void all_gather_blocks(const void* part, void* out, int64_t count, Dtype type) = 0;

  // The same, typed.
  template <class T>
  void all_reduce(std::span<T> x, ReduceOp op) {
    all_reduce(x.data(), static_cast<int64_t>(x.size()), dtype_of<T>(), op);
  }
  template <class T>
  void reduce_scatter_blocks(const T* in, T* part, int64_t count) {
    reduce_scatter_blocks(static_cast<const void*>(in), part, count, dtype_of<T>());
  }
  template <class T>
  void all_gather_blocks(const T* part, T* out, int64_t count) {
    all_gather_blocks(static_cast<const void*>(part), out, count, dtype_of<T>());
  }

  // The group as a layer's LayerContext takes it (tp, cp), in T.
  template <class T>
  TpComm<T>& layers() {
    if constexpr (std::is_same_v<T, float>)
      return f32_;
    else
      return bf16_;
  }

  // When set, every call is appended here: the layers' (all_reduce, all_gather, reduce_scatter),
  // checked against their unit pass's actions, and ZeRO's and the gradient reductions', checked
  // against their data-parallel action (executor/program_calls.h).
  std::vector<TimedCall>* calls = nullptr;

 private:
  template <class T>
  class Layers final : public TpComm<T> {
   public:
    explicit Layers(GroupComm& g) : g_(g) {}
    int size() const override { return g_.size(); }
    int rank() const override { return g_.rank(); }
    void all_reduce(std::span<T> x, ReduceOp op) override { g_.all_reduce(x, op); }
    void all_gather(std::span<const T> part, std::span<T> full) override {
      assert(full.size() == part.size() * static_cast<size_t>(size()));
      g_.all_gather(part.data(), full.data(), static_cast<int64_t>(part.size()), dtype_of<T>());
    }
    void reduce_scatter(std::span<const T> full, std::span<T> part) override {
      assert(full.size() == part.size() * static_cast<size_t>(size()));
      g_.reduce_scatter(full.data(), part.data(), static_cast<int64_t>(part.size()), dtype_of<T>());
    }

   private:
    GroupComm& g_;
  };
  Layers<float> f32_{*this};
  Layers<bf16> bf16_{*this};
};

}  // namespace shardplan
