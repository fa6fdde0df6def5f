#include "executor/runtime/watchdog.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/error.h"

namespace shardplan {

namespace {

std::atomic<Watchdog*> running{nullptr};

constexpr int kQueryTag = 1, kAnswerTag = 2;
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr double kAnswerWait_s = 2;
// A report names at most this many ranks: enough to find the one that stopped.
constexpr size_t kMostAsked = 32;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string_view kind_name(WaitKind k) {
  constexpr std::string_view names[] = {
      "no wait", "all_reduce", "all_gather", "reduce_scatter", "broadcast",         "reduce",
      "gather",  "barrier",    "recv",       "send",           "device synchronize"};
  return names[static_cast<size_t>(k)];
}

bool is_point_to_point(WaitKind k) {
  return k == WaitKind::recv || k == WaitKind::send;
}

// "all_reduce #7 of group dp (ranks 0 1)", "recv from rank 3"
std::string describe(WaitKind kind, std::string_view group, int64_t sequence, int peer,
                     const std::vector<int>& members) {
  if (kind == WaitKind::recv) return fmt::format("recv from rank {}", peer);
  if (kind == WaitKind::send) return fmt::format("send to rank {}", peer);
  if (kind == WaitKind::device) return "device synchronize (the step's kernels and collectives)";
  std::string out = fmt::format("{} #{} of group {}", kind_name(kind), sequence, group);
  if (!members.empty()) {
    out += " (ranks";
    for (int m : members) out += fmt::format(" {}", m);
    out += ")";
  }
  return out;
}

}  // namespace

WaitScope::WaitScope(WaitSite site) {
  if (Watchdog* w = running.load()) w->enter(std::move(site));
}

WaitScope::~WaitScope() {
  if (Watchdog* w = running.load()) w->leave();
}

void note_watchdog_step(int64_t step) {
  if (Watchdog* w = running.load()) {
    const std::lock_guard lock(w->mutex_);
    w->step_ = step;
  }
}

Watchdog::Watchdog(double deadline_s, std::string reason)
    : deadline_s_(deadline_s), reason_(std::move(reason)) {
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int level = 0;
  MPI_Query_thread(&level);
  can_ask_ = level == MPI_THREAD_MULTIPLE;
  running.store(this);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  running.store(nullptr);
  MPI_Comm_free(&comm_);
}

void Watchdog::enter(WaitSite site) {
  const double t = now_s();
  const std::lock_guard lock(mutex_);
  site_ = std::move(site);
  since_s_ = t;
}

void Watchdog::leave() {
  const std::lock_guard lock(mutex_);
  site_.kind = WaitKind::none;
}

Watchdog::Position Watchdog::position() const {
  Position p;
  p.kind = static_cast<int32_t>(site_.kind);
  p.peer = site_.members.empty() ? -1 : site_.members.front();
  p.sequence = site_.sequence;
  p.step = step_;
  p.waited_s = site_.kind == WaitKind::none ? 0 : now_s() - since_s_;
  const size_t n = std::min(site_.group.size(), sizeof p.group - 1);
  std::memcpy(p.group, site_.group.data(), n);
  return p;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    stop_cv_.wait_for(lock, kTick);
    if (stop_) break;
    if (can_ask_) {
      lock.unlock();
      answer_queries();
      lock.lock();
    }
    if (site_.kind != WaitKind::none && now_s() - since_s_ > deadline_s_) {
      const WaitSite site = site_;
      const double waited_s = now_s() - since_s_;
      lock.unlock();
      report_and_abort(site, waited_s);
    }
  }
}

void Watchdog::answer_queries() {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_, &pending, &status);
    if (pending == 0) return;
    int32_t query = 0;
    MPI_Recv(&query, 1, MPI_INT32_T, status.MPI_SOURCE, kQueryTag, comm_, MPI_STATUS_IGNORE);
    Position p;
    {
      const std::lock_guard lock(mutex_);
      p = position();
    }
    // The asker posted its receive before asking: the send completes at once.
    MPI_Send(&p, sizeof p, MPI_BYTE, status.MPI_SOURCE, kAnswerTag, comm_);
  }
}

std::vector<std::optional<Watchdog::Position>> Watchdog::ask_where(const std::vector<int>& ranks) {
  const size_t n = ranks.size();
  std::vector<Position> answers(n);
  std::vector<MPI_Request> receives(n), queries(n);
  const int32_t query = 0;
  for (size_t i = 0; i < n; ++i) {
    MPI_Irecv(&answers[i], sizeof(Position), MPI_BYTE, ranks[i], kAnswerTag, comm_, &receives[i]);
    MPI_Isend(&query, 1, MPI_INT32_T, ranks[i], kQueryTag, comm_, &queries[i]);
  }
  std::vector<std::optional<Position>> where(n);
  size_t waiting = n;
  for (const double until = now_s() + kAnswerWait_s; waiting > 0 && now_s() < until;) {
    answer_queries();  // another rank may be asking this one at the same time
    for (size_t i = 0; i < n; ++i) {
      int done = 0;
      if (!where[i]) MPI_Test(&receives[i], &done, MPI_STATUS_IGNORE);
      if (done != 0) where[i] = answers[i], --waiting;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return where;
}

void Watchdog::report_and_abort(const WaitSite& site, double waited_s) {
  int64_t step = 0;
  {
    const std::lock_guard lock(mutex_);
    step = step_;
  }
  // The ranks waited on first, then the others (whose answers show where a chain of waits ends:
  // rank 0 waits on rank 2, which waits on the stopped rank 3).
  std::vector<int> asked = site.members;
  for (int r = 0; r < size_; ++r)
    if (std::find(asked.begin(), asked.end(), r) == asked.end()) asked.push_back(r);
  std::erase(asked, rank_);
  const auto waited_on = [&](int r) {
    return site.members.empty() ||
           std::find(site.members.begin(), site.members.end(), r) != site.members.end();
  };
  const size_t left_out = asked.size() > kMostAsked ? asked.size() - kMostAsked : 0;
  asked.resize(std::min(asked.size(), kMostAsked));

  std::string text =
      fmt::format("shardplan: error: rank {}: watchdog: waited {:.1f} s ({}) in {} at step {}\n",
                  rank_, waited_s, reason_,
                  describe(site.kind, site.group, site.sequence,
                           site.members.empty() ? -1 : site.members.front(), site.members),
                  step);
  if (can_ask_) {
    const std::vector<std::optional<Position>> where = ask_where(asked);
    for (size_t i = 0; i < asked.size(); ++i) {
      const std::string_view state = !waited_on(asked[i])           ? "(not waited on)"
                                     : is_point_to_point(site.kind) ? "has not sent"
                                                                    : "has not arrived";
      if (!where[i]) {
        text += fmt::format(
            "  rank {} {}: no answer within {:.0f} s (stopped, hung with all its threads, or "
            "gone)\n",
            asked[i], state, kAnswerWait_s);
        continue;
      }
      const Position& p = *where[i];
      const auto kind = static_cast<WaitKind>(p.kind);
      const std::string_view group(p.group);
      if (waited_on(asked[i]) && !is_point_to_point(site.kind) && kind == site.kind &&
          group == site.group && p.sequence == site.sequence) {
        text += fmt::format("  rank {} arrived: waiting {:.1f} s in the same {}\n", asked[i],
                            p.waited_s, kind_name(kind));
      } else if (kind == WaitKind::none) {
        text += fmt::format("  rank {} {}: at step {}, running (in no wait)\n", asked[i], state,
                            p.step);
      } else {
        text += fmt::format("  rank {} {}: at step {}, waiting {:.1f} s in {}\n", asked[i], state,
                            p.step, p.waited_s, describe(kind, group, p.sequence, p.peer, {}));
      }
    }
    if (left_out > 0) text += fmt::format("  ({} more ranks not asked)\n", left_out);
  } else {
    text +=
        "  (the other ranks cannot be asked where they are: MPI runs without "
        "MPI_THREAD_MULTIPLE here)\n";
  }
  text +=
      "  hint: a rank that stops stalls every rank that waits on it; if healthy steps are this "
      "slow, raise --timeout\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(nullptr);
  // From this thread: MPI_THREAD_MULTIPLE allows it; without it MPI_Abort still ends the job in
  // Open MPI and MPICH, which is all that is left to do.
  MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::user_error));
  std::abort();  // MPI_Abort returned: it must not
}

}  // namespace shardplan
