// Work split over one worker per core, each on its own part, joined before the caller goes on:
// the planner's enumeration, search and full estimates of what it kept, validate's rows.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace shardplan {

// Runs work(0), …, work(n − 1) on n threads while the calling thread runs meanwhile(running),
// where running() says whether a worker is still at work (for a progress line). Rethrows what a
// worker threw, once every worker is done.
template <class Work, class Meanwhile>
void run_threads(size_t n, Work work, Meanwhile meanwhile) {
  std::exception_ptr failure;
  std::mutex failure_mutex;
  std::atomic<size_t> running{n};
  std::vector<std::thread> workers;
  workers.reserve(n);
  for (size_t i = 0; i < n; ++i)
    workers.emplace_back([&, i] {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        failure = std::current_exception();
      }
      running.fetch_sub(1);
    });
  meanwhile([&running] { return running.load() > 0; });
  for (std::thread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

// Runs work(0), …, work(n − 1) on up to `threads` threads, each taking the next index in turn
// (so that items of uneven cost spread evenly). Rethrows as run_threads does.
template <class Work>
void parallel_for(size_t n, size_t threads, Work work) {
  std::atomic<size_t> next{0};
  run_threads(
      std::clamp<size_t>(threads, 1, std::max<size_t>(n, 1)),
      [&](size_t) {
        for (size_t i = next++; i < n; i = next++) work(i);
      },
      [](const auto&) {});
}

}  // namespace shardplan
