// Memory-bound microbenchmarks: STREAM's four kernels (J. D. McCalpin, "Memory bandwidth and
// machine balance in current high performance computers", IEEE TCCA Newsletter, December 1995)
// on fp32 arrays, every rank at once, as the executor's element-wise layers and optimizer run.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "calibrate/calibrate_timing.h"

namespace shardplan {

struct StreamResult {
  std::string_view kernel;  // copy, scale, add, triad
  int arrays = 0;  // arrays each element touches, as STREAM counts bytes (no write-allocate)
  double time_s = 0;
  double GBps = 0;  // per rank, every rank streaming at once
};

// The largest cache of CPU 0 in bytes, from sysfs as lscpu reads it ("32768K"); 0 when unknown.
// (glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) is not used: on this machine's VM it reports 320 MiB for
// a 32 MiB L3.)
int64_t largest_cache_bytes();

// How many copies of a `set_bytes` set of buffers, taken in turn, keep the next call's out of every
// cache: enough to exceed `cold_bytes` (twice the largest cache: STREAM's rule for its arrays,
// halved), at most 256 (sets so small that 256 stay cached are timed cached: under 256 KiB for a
// 32 MiB cache, so that an attention head's 256 KiB of probabilities is still timed cold); 1 for
// cold_bytes 0.
int64_t cold_copies(int64_t set_bytes, int64_t cold_bytes);

// Elements per array by STREAM's rule (stream.c's comment on STREAM_ARRAY_SIZE): each array at
// least 4 times the largest cache; STREAM's default of 10^7 elements when no cache size is known.
int64_t stream_elements();

std::vector<StreamResult> measure_stream(int64_t elements, const TimingOptions& t, MPI_Comm comm);

// The triad's rate, STREAM's headline figure and the profile's memory_GBps.
double triad_GBps(const std::vector<StreamResult>& results);

void print_stream(std::FILE* out, const std::vector<StreamResult>& results, int64_t elements);

}  // namespace shardplan
