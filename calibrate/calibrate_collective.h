// The collective benchmark driver, as nccl-tests has one: each collective is a short file
// (calibrate_<name>.cpp) supplying its buffer sizes and its call; this driver sweeps sizes, times,
// prints nccl-tests' columns (size, count, type, time, algbw, busbw) and fits alpha and beta. The
// calls themselves go through a CollectiveRunner: MPI on host buffers here, NCCL on GPU buffers
// for the CUDA backend (cuda/nccl_collectives.h), so one driver times both.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "calibrate/calibrate_timing.h"
#include "core/collective.h"
#include "core/profile.h"

namespace shardplan {

// Elements of one rank's send and receive buffers.
struct BufferElements {
  int64_t send = 0;
  int64_t recv = 0;
};

// What one collective supplies (nccl-tests' getCollByteCount and runColl). Buffers hold float, the
// executor's fp32; `count` is the call's count argument, nccl-tests' "count" column. A collective
// the executor calls in place is timed in place (nccl-tests' in-place columns): its receive buffer
// holds the input, and `run` is given it as both buffers.
struct CollectiveBench {
  Collective collective;
  BufferElements (*buffers)(int64_t count, int n);
  void (*run)(const float* send, float* recv, int64_t count, MPI_Comm comm);
  bool in_place = false;
};

extern const CollectiveBench kAllReduceBench;      // calibrate_all_reduce.cpp
extern const CollectiveBench kReduceScatterBench;  // calibrate_reduce_scatter.cpp
extern const CollectiveBench kAllGatherBench;      // calibrate_all_gather.cpp
extern const CollectiveBench kAllToAllBench;       // calibrate_all_to_all.cpp
extern const CollectiveBench kBroadcastBench;      // calibrate_broadcast.cpp
extern const CollectiveBench kSendRecvBench;       // calibrate_send_recv.cpp

// All six, in the order the calibration runs them.
std::vector<const CollectiveBench*> collective_benches();

// Those a step also calls on inputs no cache holds (reads_cold_input, core/schedule.h): a
// several-layer gradient bucket's all_reduce (DDP) or reduce_scatter (ZeRO-1/2), and ZeRO's
// parameter all_gather. Each is swept a second time with cold input where calls are timed one at
// a time (step_work).
std::vector<const CollectiveBench*> cold_input_benches();

// One line of the table. size is nccl-tests' size: the larger of one rank's send and receive
// buffers in bytes (reduce-scatter's input, all-gather's output); algbw = size / time and
// busbw = algbw × bus_bandwidth_factor(collective, n).
struct BenchRow {
  int64_t size_bytes = 0;
  int64_t count = 0;
  double time_s = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};
BenchRow bench_row(const CollectiveBench& b, int n, int64_t count, double time_s);

// The count whose size is the largest not above `bytes` (0 when even one element per rank is more).
int64_t count_for_bytes(const CollectiveBench& b, int n, int64_t bytes);

// Rank r's send buffer holds send_value(r, i) at element i, so results can be checked by hand.
float send_value(int rank, int64_t i);

// One group's side of the driver: buffers for a collective's count (rank r's send buffer filled by
// send_value(r, ·)), one call of it, and the wait for the calls issued (a GPU runs them later).
class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  virtual MPI_Comm group() const = 0;  // the group's MPI communicator: barriers and timing
  virtual void prepare(const CollectiveBench& b, int64_t count) = 0;
  virtual void run() = 0;
  virtual void finish() = 0;
  virtual std::vector<float> received() = 0;  // the receive buffer after finish()
  // What a training step does before each call, untimed, where this backend's calls are timed one
  // at a time as a step makes them (median_single_call_s); empty where they are timed back to back
  // in batches (a GPU's, queued on a stream). It writes the call's input unless `cold_input`, which
  // leaves it as written a whole turn of buffer sets ago, as a parameter shard is when gathered.
  virtual std::function<void()> step_work(bool /*cold_input*/) { return {}; }
};

// The MPI calls of the CollectiveBench tables, on host buffers.
class MpiCollectiveRunner final : public CollectiveRunner {
 public:
  explicit MpiCollectiveRunner(MPI_Comm group) : group_(group) {}
  MPI_Comm group() const override { return group_; }
  void prepare(const CollectiveBench& b, int64_t count) override;
  void run() override;
  void finish() override {}
  std::vector<float> received() override { return sets_[last_].recv; }
  std::function<void()> step_work(bool cold_input) override;

 private:
  struct Buffers {
    std::vector<float> send, recv;
  };
  MPI_Comm group_;
  const CollectiveBench* bench_ = nullptr;
  int64_t count_ = 0;
  std::vector<Buffers> sets_;  // taken in turn, so that no cache holds the next call's
  size_t next_ = 0, last_ = 0;
  void write_input(Buffers& set) const;  // send_value into the call's input
};

// One call on `runner`'s group; returns the receive buffer.
std::vector<float> run_collective_once(CollectiveRunner& runner, const CollectiveBench& b,
                                       int64_t count);

struct SweepOptions {
  int64_t min_bytes = 8;        // nccl-tests' -b
  int64_t max_bytes = 4 << 20;  // nccl-tests' -e
  int64_t step_factor = 2;      // nccl-tests' -f
  TimingOptions timing;
};

// The counts a sweep times on n ranks: sizes from min_bytes to max_bytes, step_factor apart, and
// max_bytes itself where the steps pass it by (the size a whole model's gradients all-reduce: a
// library's time can jump between two steps — on this machine Open MPI's in-place all_reduce took
// 5.8 ms at 16 MiB, 9.2 ms at 24.6 MiB and 21.3 ms at 32 MiB, measured 2026-11-23 — so the
// largest size a plan uses is timed, not interpolated); each rounded down to whole elements per
// rank, sizes below one element per rank left out.
std::vector<int64_t> sweep_counts(const CollectiveBench& b, const SweepOptions& o, int n);

// A sweep of one collective on one group, and its alpha-beta fit.
struct CollectiveSweep {
  std::vector<BenchRow> rows;
  CollectiveFit fit;
  double max_fit_error = 0;  // the fit's largest relative error over the rows
};

// Every rank of the runner's group calls this together; `level` is the interconnect level the
// group spans; `cold_input` as step_work's (the runner must time calls one at a time). Needs two
// counts at least (sweep_counts) to fit.
CollectiveSweep sweep_collective(const CollectiveBench& b, const SweepOptions& o,
                                 CollectiveRunner& runner, size_t level, bool cold_input);

// Every collective on groups of each of calibration_group_sizes' sizes (consecutive ranks, as tp
// groups are; every group at once; ranks left over sit out), each group's runner made by
// `runner_for` (collective over the group); then cold_input_benches with cold input, where the
// runner times calls one at a time. Rank 0 prints the tables to `out` and returns every
// group size's fits (it is in every first group); the others return theirs.
using RunnerFactory = std::function<std::unique_ptr<CollectiveRunner>(MPI_Comm group)>;
std::vector<CollectiveFit> measure_collectives(const SweepOptions& o, MPI_Comm world,
                                               const RunnerFactory& runner_for, std::FILE* out);

// Group sizes the collectives run over on `world` ranks: 2, 4, 8, ... up to world, and world.
std::vector<int> calibration_group_sizes(int world);

// The nccl-tests table of a sweep, then its fit.
void print_sweep(std::FILE* out, const CollectiveSweep& s, int groups);

}  // namespace shardplan
