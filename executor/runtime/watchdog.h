// A deadline on every wait of a rank, as PyTorch's NCCL watchdog puts one on every collective
// (ProcessGroupNCCL's timeout and heartbeat monitor): a rank stopped (SIGSTOP, a debugger) or hung
// leaves the others blocked in MPI for ever, and the job with them.
//
// The main thread marks each wait it enters (WaitScope: a collective with its group and its place
// in that group's order, a receive with its peer, a barrier); a thread checks every 100 ms. A wait
// past the deadline asks each rank it waits on where it is (over its own duplicate of
// MPI_COMM_WORLD; every rank's watchdog thread answers while its main thread is blocked or busy,
// which MPI_THREAD_MULTIPLE allows), prints which collective, group and step this rank waited
// in and which ranks had not arrived, and aborts the job (MPI_Abort, exit 1). A rank that does not
// answer within 2 s is stopped, hung outside MPI with its threads, or gone.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "executor/runtime/wait_scope.h"

namespace shardplan {

// One per rank process, while MPI is initialised. Construction is collective over
// MPI_COMM_WORLD (it duplicates it).
class Watchdog {
 public:
  // `deadline_s`: the longest a wait may last; `reason` says where it came from, for the report
  // ("--timeout 3", "20 x the predicted step").
  Watchdog(double deadline_s, std::string reason);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Where this rank is, as it answers a query: fixed size, sent as bytes.
  struct Position {
    int32_t kind = 0;  // WaitKind
    int32_t peer = -1;
    int64_t sequence = 0;
    int64_t step = 0;
    double waited_s = 0;
    char group[16] = {};
  };

 private:
  friend class WaitScope;
  friend void note_watchdog_step(int64_t step);

  void enter(WaitSite site);
  void leave();
  Position position() const;  // under mutex_
  void watch();
  void answer_queries();
  // Where each of `ranks` is, as it answers within kAnswerWait_s (none: no answer), this rank
  // answering the others' queries meanwhile.
  std::vector<std::optional<Position>> ask_where(const std::vector<int>& ranks);
  [[noreturn]] void report_and_abort(const WaitSite& site, double waited_s);

  const double deadline_s_;
  const std::string reason_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool can_ask_ = false;  // MPI_THREAD_MULTIPLE: the watchdog thread may call MPI

  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  WaitSite site_;
  double since_s_ = 0;  // when the wait began (steady clock)
  int64_t step_ = 0;
  std::thread thread_;
};

}  // namespace shardplan
