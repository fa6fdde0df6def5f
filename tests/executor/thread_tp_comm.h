// A tensor-parallel group of threads in one process, for the sharding tests: each thread runs one
// tp rank's layers and the collectives meet at a barrier, every rank reducing in rank order (so all
// ranks get bit-identical results, as NCCL and MPI guarantee within a group). The same groups serve
// as context-parallel groups, alone or in a tp × cp grid.
#pragma once

#include <algorithm>
#include <barrier>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "executor/layers/tp_comm.h"

namespace shardplan::test {

template <class T>
class ThreadTpGroup {
 public:
  explicit ThreadTpGroup(int size)
      : size_(size), barrier_(size), slots_(static_cast<size_t>(size)) {}
  int size() const { return size_; }

  // Runs body(rank) on one thread per rank and waits for all of them.
  void run(const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size_; ++r) threads.emplace_back(body, r);
    for (std::thread& t : threads) t.join();
  }

 private:
  template <class U>
  friend class ThreadTpComm;
  int size_;
  std::barrier<> barrier_;
  std::vector<std::vector<T>> slots_;  // what each rank contributed to the collective under way
};

template <class T>
class ThreadTpComm final : public TpComm<T> {
 public:
  ThreadTpComm(ThreadTpGroup<T>& group, int rank) : g_(group), rank_(rank) {}
  int size() const override { return g_.size_; }
  int rank() const override { return rank_; }

  void all_reduce(std::span<T> x, ReduceOp op) override {
    publish(x);
    for (size_t i = 0; i < x.size(); ++i) {
      T v = g_.slots_[0][i];
      for (int r = 1; r < g_.size_; ++r)
        v = op == ReduceOp::sum ? v + g_.slots_[r][i] : std::max(v, g_.slots_[r][i]);
      x[i] = v;
    }
    g_.barrier_.arrive_and_wait();
  }
  void all_gather(std::span<const T> part, std::span<T> full) override {
    publish(part);
    for (int r = 0; r < g_.size_; ++r)
      std::copy(g_.slots_[r].begin(), g_.slots_[r].end(), full.begin() + r * part.size());
    g_.barrier_.arrive_and_wait();
  }
  void reduce_scatter(std::span<const T> full, std::span<T> part) override {
    publish(full);
    const size_t begin = static_cast<size_t>(rank_) * part.size();
    for (size_t i = 0; i < part.size(); ++i) {
      T v = g_.slots_[0][begin + i];
      for (int r = 1; r < g_.size_; ++r) v += g_.slots_[r][begin + i];
      part[i] = v;
    }
    g_.barrier_.arrive_and_wait();
  }

 private:
  void publish(std::span<const T> x) {
    g_.slots_[rank_].assign(x.begin(), x.end());
    g_.barrier_.arrive_and_wait();
  }
  ThreadTpGroup<T>& g_;
  int rank_;
};

// tp × cp ranks on threads, as the executor's grid: rank (t, c) is tp rank t of tp group c and cp
// rank c of cp group t. Runs body(tp_comm, cp_comm) on each and waits for all of them.
template <class T>
void run_tp_cp_grid(int tp, int cp,
                    const std::function<void(ThreadTpComm<T>&, ThreadTpComm<T>&)>& body) {
  std::vector<std::unique_ptr<ThreadTpGroup<T>>> tp_groups, cp_groups;
  for (int c = 0; c < cp; ++c) tp_groups.push_back(std::make_unique<ThreadTpGroup<T>>(tp));
  for (int t = 0; t < tp; ++t) cp_groups.push_back(std::make_unique<ThreadTpGroup<T>>(cp));
  std::vector<std::thread> threads;
  for (int c = 0; c < cp; ++c)
    for (int t = 0; t < tp; ++t)
      threads.emplace_back([&, t, c] {
        ThreadTpComm<T> tp_comm(*tp_groups[static_cast<size_t>(c)], t);
        ThreadTpComm<T> cp_comm(*cp_groups[static_cast<size_t>(t)], c);
        body(tp_comm, cp_comm);
      });
  for (std::thread& th : threads) th.join();
}

}  // namespace shardplan::test
