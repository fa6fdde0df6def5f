#include "calibrate/calibrate_collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <stdexcept>
#include <string>

#include "calibrate/calibrate_memory.h"
#include "core/alpha_beta_fit.h"

namespace shardplan {

namespace {

constexpr int64_t kElementBytes = sizeof(float);

int rank_in(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  return n;
}

int64_t size_bytes(const CollectiveBench& b, int n, int64_t count) {
  const BufferElements e = b.buffers(count, n);
  return std::max(e.send, e.recv) * kElementBytes;
}

// 0 when every rank of `group` shares one node's memory (MPI's shared-memory split), else 1: the
// backends know a node and the network across nodes.
size_t group_level(MPI_Comm group) {
  MPI_Comm node;
  MPI_Comm_split_type(group, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int one_node = node_size == size_of(group) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_MIN, group);
  return one_node ? 0 : 1;
}

}  // namespace

std::vector<const CollectiveBench*> collective_benches() {
  return {&kAllReduceBench, &kReduceScatterBench, &kAllGatherBench,
          &kAllToAllBench,  &kBroadcastBench,     &kSendRecvBench};
}

std::vector<const CollectiveBench*> cold_input_benches() {
  return {&kAllReduceBench, &kReduceScatterBench, &kAllGatherBench};
}

BenchRow bench_row(const CollectiveBench& b, int n, int64_t count, double time_s) {
  BenchRow r{size_bytes(b, n, count), count, time_s, 0, 0};
  r.algbw_GBps = static_cast<double>(r.size_bytes) / time_s / 1e9;
  r.busbw_GBps = r.algbw_GBps * bus_bandwidth_factor(b.collective, n);
  return r;
}

int64_t count_for_bytes(const CollectiveBench& b, int n, int64_t bytes) {
  return bytes / size_bytes(b, n, 1);  // buffers grow linearly with count
}

float send_value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * 1000 + i % 1000);
}

void MpiCollectiveRunner::prepare(const CollectiveBench& b, int64_t count) {
  const BufferElements e = b.buffers(count, size_of(group_));
  assert(e.send <= INT_MAX && e.recv <= INT_MAX);
  bench_ = &b;
  count_ = count;
  // Calls take turns over buffer sets that no cache holds (cold_copies), as training's collectives
  // meet gradients and parameter shards: on this machine a 3 MB all-gather took 0.24 ms from cache
  // and 0.82 ms from memory (Open MPI 4.1, 2 ranks; measured 2026-11-23). Where calls are timed as
  // a step makes them, each one's input is written just before it unless it is to be cold
  // (step_work).
  assert(!b.in_place || e.send <= e.recv);
  const int64_t send = b.in_place ? 0 : e.send;
  const int64_t sets = cold_copies((send + e.recv) * kElementBytes, 2 * largest_cache_bytes());
  sets_.assign(static_cast<size_t>(sets), {});
  for (Buffers& set : sets_) {
    set.send.resize(static_cast<size_t>(send));
    set.recv.assign(static_cast<size_t>(e.recv), 0.0f);
    write_input(set);
  }
  next_ = 0;
}

void MpiCollectiveRunner::write_input(Buffers& set) const {
  const int rank = rank_in(group_);
  std::vector<float>& input = bench_->in_place ? set.recv : set.send;
  const int64_t count = bench_->buffers(count_, size_of(group_)).send;
  for (int64_t i = 0; i < count; ++i) input[static_cast<size_t>(i)] = send_value(rank, i);
}

// A step calls its collectives between compute, on inputs the compute has just written: timed so,
// a 256 KiB in-place all_reduce took 47-104 us on this machine against 39-66 us back to back, a 4
// MiB one 1.2 ms against 0.74-0.83 ms, while at 24.6 MiB both took the same (2 ranks, Open MPI
// 4.1, 2 ms of register arithmetic before each call, medians of 21; measured 2026-11-23). 2 ms is
// the compute between gpt-small's tp synchronisations on 2 ranks (272 in 0.85 s: 3 ms each) less
// the copy; the sizes and the work stay the sweep's.
std::function<void()> MpiCollectiveRunner::step_work(bool cold_input) {
  constexpr double kComputeS = 2e-3;
  return [this, cold_input] {
    if (!cold_input) write_input(sets_[next_]);
    busy_for(kComputeS);
  };
}

void MpiCollectiveRunner::run() {
  last_ = next_;
  next_ = (next_ + 1) % sets_.size();
  Buffers& set = sets_[last_];
  bench_->run(bench_->in_place ? set.recv.data() : set.send.data(), set.recv.data(), count_,
              group_);
}

std::vector<float> run_collective_once(CollectiveRunner& runner, const CollectiveBench& b,
                                       int64_t count) {
  runner.prepare(b, count);
  runner.run();
  runner.finish();
  return runner.received();
}

std::vector<int64_t> sweep_counts(const CollectiveBench& b, const SweepOptions& o, int n) {
  assert(o.min_bytes > 0 && o.step_factor > 1);
  std::vector<int64_t> counts;
  const auto add = [&](int64_t bytes) {
    const int64_t count = count_for_bytes(b, n, bytes);
    if (count > 0 && (counts.empty() || counts.back() < count)) counts.push_back(count);
  };
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) add(bytes);
  add(o.max_bytes);
  return counts;
}

CollectiveSweep sweep_collective(const CollectiveBench& b, const SweepOptions& o,
                                 CollectiveRunner& runner, size_t level, bool cold_input) {
  const MPI_Comm group = runner.group();
  const int n = size_of(group);
  CollectiveSweep s;
  std::vector<SizeTime> points;
  for (int64_t count : sweep_counts(b, o, n)) {
    runner.prepare(b, count);
    const std::function<void()> step_work = runner.step_work(cold_input);
    assert((step_work || !cold_input) && "cold input needs calls timed one at a time");
    const double t =
        step_work
            ? median_single_call_s([&] { runner.run(); }, step_work, o.timing, group)
            : median_time_s([&] { runner.run(); }, o.timing, group, {}, [&] { runner.finish(); });
    s.rows.push_back(bench_row(b, n, count, t));
    points.push_back({static_cast<double>(s.rows.back().size_bytes), t});
  }
  AlphaBeta f;
  try {
    f = fit_alpha_beta(points);
  } catch (const std::runtime_error& e) {
    // A busy machine can time the small sizes slower than the large ones: say which sweep.
    std::string times;
    for (const SizeTime& p : points)
      times += fmt::format(" {:.0f} B: {:.1f} us;", p.bytes, p.time_s * 1e6);
    throw std::runtime_error(fmt::format("{} on {} ranks: {} (measured{} rerun on an idle machine)",
                                         enum_name(b.collective, kCollectiveNames), n, e.what(),
                                         times));
  }
  s.fit = {.collective = b.collective,
           .level = level,
           .ranks = n,
           .alpha_us = f.alpha_s * 1e6,
           .algbw_GBps = 1 / f.beta_s_per_byte / 1e9,
           .measured = {},
           .cold_input = cold_input};
  for (const BenchRow& r : s.rows) s.fit.measured.push_back({r.size_bytes, r.time_s * 1e6});
  s.max_fit_error = max_relative_error(f, points);
  return s;
}

std::vector<CollectiveFit> measure_collectives(const SweepOptions& o, MPI_Comm world,
                                               const RunnerFactory& runner_for, std::FILE* out) {
  const int rank = rank_in(world), world_size = size_of(world);
  std::vector<CollectiveFit> fits;
  for (int n : calibration_group_sizes(world_size)) {
    const int groups = world_size / n;
    MPI_Comm group;
    MPI_Comm_split(world, rank / n < groups ? rank / n : MPI_UNDEFINED, rank, &group);
    if (group != MPI_COMM_NULL) {
      const size_t level = group_level(group);
      {
        const std::unique_ptr<CollectiveRunner> runner = runner_for(group);
        const auto sweep = [&](const CollectiveBench& b, bool cold_input) {
          const CollectiveSweep s = sweep_collective(b, o, *runner, level, cold_input);
          if (rank == 0) print_sweep(out, s, groups);
          fits.push_back(s.fit);
        };
        for (const CollectiveBench* b : collective_benches()) sweep(*b, false);
        if (runner->step_work(true))
          for (const CollectiveBench* b : cold_input_benches()) sweep(*b, true);
      }
      MPI_Comm_free(&group);
    }
    MPI_Barrier(world);
  }
  return fits;  // rank 0's, complete: it is in every first group
}

std::vector<int> calibration_group_sizes(int world) {
  std::vector<int> sizes;
  for (int n = 2; n <= world; n *= 2) sizes.push_back(n);
  if (world > 1 && (sizes.empty() || sizes.back() != world)) sizes.push_back(world);
  return sizes;
}

void print_sweep(std::FILE* out, const CollectiveSweep& s, int groups) {
  const CollectiveFit& f = s.fit;
  fmt::print(out, "# {}{}: {} group{} of {} ranks at once, interconnect level {}\n",
             enum_name(f.collective, kCollectiveNames),
             f.cold_input ? " (cold input: no cache holds it)" : "", groups, groups == 1 ? "" : "s",
             f.ranks, f.level);
  fmt::print(out, "# {:>10} {:>12} {:>8} {:>10} {:>8} {:>8}\n", "size", "count", "type", "time",
             "algbw", "busbw");
  fmt::print(out, "# {:>10} {:>12} {:>8} {:>10} {:>8} {:>8}\n", "(B)", "(elements)", "", "(us)",
             "(GB/s)", "(GB/s)");
  for (const BenchRow& r : s.rows)
    fmt::print(out, "  {:>10} {:>12} {:>8} {:>10.2f} {:>8.2f} {:>8.2f}\n", r.size_bytes, r.count,
               "float", r.time_s * 1e6, r.algbw_GBps, r.busbw_GBps);
  fmt::print(
      out,
      "# fit t = alpha + size / algbw: alpha {:.2f} us, algbw {:.2f} GB/s (busbw {:.2f} GB/s), "
      "largest error {:.0f}%\n\n",
      f.alpha_us, f.algbw_GBps, f.algbw_GBps * bus_bandwidth_factor(f.collective, f.ranks),
      s.max_fit_error * 100);
}

}  // namespace shardplan
