// How every calibration microbenchmark is timed: untimed warm-up calls, then several samples, each
// a batch of back-to-back calls started together on every rank after a barrier and charged at the
// slowest rank's time; the median sample is the result.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

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

}  // namespace shardplan
