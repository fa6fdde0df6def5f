// The tensor-parallel group as the layers see it: the caller supplies the collectives (MPI in the
// executor, threads in the tests, nothing for one rank) and the layers call them where Megatron-LM
// places its f/g operators (Shoeybi et al. 2019, Fig. 3) and, under sequence parallelism, the
// all-gather / reduce-scatter pairs that replace them (Korthikanti et al. 2022, §4.2.2, Fig. 5).
// The context-parallel group's collectives (LayerContext::cp) go through the same interface.
#pragma once

#include <algorithm>
#include <cassert>
#include <span>

namespace shardplan {

enum class ReduceOp { sum, max };

template <class T>
class TpComm {
 public:
  virtual ~TpComm() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // In place, over every rank of the group.
  virtual void all_reduce(std::span<T> x, ReduceOp op) = 0;
  // full = the ranks' parts concatenated in rank order; full.size() = size() · part.size().
  virtual void all_gather(std::span<const T> part, std::span<T> full) = 0;
  // part = this rank's size()-th of the element-wise sum of every rank's full.
  virtual void reduce_scatter(std::span<const T> full, std::span<T> part) = 0;
};

// tp = 1: every collective is the identity.
template <class T>
class SingleRankTpComm final : public TpComm<T> {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  void all_reduce(std::span<T>, ReduceOp) override {}
  void all_gather(std::span<const T> part, std::span<T> full) override { copy(part, full); }
  void reduce_scatter(std::span<const T> full, std::span<T> part) override { copy(full, part); }

 private:
  static void copy(std::span<const T> from, std::span<T> to) {
    assert(from.size() == to.size());
    std::copy(from.begin(), from.end(), to.begin());
  }
};

}  // namespace shardplan
