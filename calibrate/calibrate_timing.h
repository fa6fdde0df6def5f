// How every calibration microbenchmark is timed: untimed warm-up calls, then several samples, each
// a batch of back-to-back calls started together on every rank after a barrier and charged at the
// slowest rank's time; the median sample is the result.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "executor/runtime/device_error.h"

namespace shardplan {

struct TimingOptions {
  int warmup = 5;              // untimed calls first (nccl-tests' default, -w 5)
  int samples = 11;            // timed samples; the median is kept
  double min_sample_s = 1e-3;  // calls per sample are batched until a sample lasts this long
};

// Seconds per call of `op`, run by every rank of `comm` at once (`op` may itself communicate on
// `comm`). Every rank returns the same value. With `excluded_s`, a running count of seconds spent
// inside the calls on work timed elsewhere (a MatmulStats' GEMM seconds), each batch's increase
// of it is left out: the time of the rest of the call. With `drain`, called after each batch's
// calls before the clock is read: a GPU's calls are only issued by `op`, and drain waits for them.
double median_time_s(const std::function<void()>& op, const TimingOptions& t, MPI_Comm comm,
                     const std::function<double()>& excluded_s = {},
                     const std::function<void()>& drain = {});

// Seconds of one call of `op` made as a training step makes it, apart: each sample runs `before`
// (untimed: the work a step does between two calls), then a barrier, then one timed call, charged
// at the slowest rank's time; the median over t.samples samples after t.warmup untimed ones. Every
// rank returns the same value.
double median_single_call_s(const std::function<void()>& op, const std::function<void()>& before,
                            const TimingOptions& t, MPI_Comm comm);

// Arithmetic on registers only (8 independent multiply-adds an iteration, no memory traffic):
// `iterations` of it, and as many as take `seconds` at least. A core busy so is busy as a compute
// kernel keeps it, and its time varies only with what takes the core away.
float register_work(int64_t iterations);
void busy_for(double seconds);

// f(), a device's error in it named by what was being measured ("timing gemm 4096 x 4096 x 128 of
// llama3-8b tp=1 mbs=1 attn scores: cudaMemcpyAsync(...) at ...: invalid argument"), so that a
// calibration that fails says where.
template <class F>
decltype(auto) measuring(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const DeviceError& e) {
    throw DeviceError(what + ": " + e.what(), e.rank);
  }
}

}  // namespace shardplan
