// `shardplan calibrate --backend cpu`: GEMMs and memory-bound kernels over the shapes of the given
// models' layers, STREAM, and every collective over sizes and group sizes, on MPI ranks (one per
// core), fitted into a Profile. Rank 0 prints nccl-tests-style tables as it goes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "core/model.h"
#include "core/profile.h"
#include "executor/calibrate_collective.h"
#include "executor/calibrate_timing.h"

namespace shardplan {

struct CalibrateOptions {
  std::vector<Model> models;     // GEMM shapes from their layers
  std::vector<int> tp = {1, 2};  // tensor-parallel shares of those layers
  // Sequences per micro-batch: the sizes a plan of up to 8 sequences per micro-batch runs at (the
  // GEMM rates and kernel rates change with the shape as it leaves the caches).
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  int64_t seq = 0;              // tokens per sequence; 0: each model's max_position_embeddings
  int64_t stream_elements = 0;  // 0: stream_elements()
  // GEMM, kernel and STREAM timing: samples of 10 ms at least, so that one sample of a
  // millisecond-long GEMM is not one call's luck on a shared machine (measured here: the same
  // GEMM varied 50-80 GFLOP/s between runs with 1 ms samples).
  TimingOptions timing{.warmup = 5, .samples = 7, .min_sample_s = 10e-3};
  SweepOptions sweep;  // collective sizes and timing
};

// The largest collective size to sweep for `models`: the smallest power of two holding a whole
// model's fp32 gradients (the largest buffer a plan all-reduces, data parallelism without ZeRO
// or buckets), and 4 MiB (nccl-tests' figure at which bandwidth settles) at least.
int64_t sweep_max_bytes(const std::vector<Model>& models);

// Throws InputError naming --tp when a tp does not divide a model's heads, and --max-bytes when a
// collective's sweep on some group of `world` ranks would have fewer than two sizes to fit.
void validate_calibrate_options(const CalibrateOptions& o, int world);

// Group sizes the collectives run over on `world` ranks: 2, 4, 8, ... up to world, and world.
std::vector<int> calibration_group_sizes(int world);

// Every rank of `world` calls this and gets the same profile; rank 0 prints to `out` (the others'
// `out` is ignored).
Profile calibrate_cpu(const CalibrateOptions& o, MPI_Comm world, std::FILE* out);

}  // namespace shardplan
