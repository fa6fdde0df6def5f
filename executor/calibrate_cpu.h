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
  std::vector<Model> models;                 // GEMM shapes from their layers
  std::vector<int> tp = {1, 2};              // tensor-parallel shares of those layers
  std::vector<int64_t> micro_batches = {1};  // sequences per micro-batch
  int64_t seq = 0;              // tokens per sequence; 0: each model's max_position_embeddings
  int64_t stream_elements = 0;  // 0: stream_elements()
  TimingOptions timing;         // GEMM and STREAM timing
  SweepOptions sweep;           // collective sizes and timing
};

// Throws InputError naming --tp when a tp does not divide a model's heads, and --max-bytes when a
// collective's sweep on some group of `world` ranks would have fewer than two sizes to fit.
void validate_calibrate_options(const CalibrateOptions& o, int world);

// Group sizes the collectives run over on `world` ranks: 2, 4, 8, ... up to world, and world.
std::vector<int> calibration_group_sizes(int world);

// Every rank of `world` calls this and gets the same profile; rank 0 prints to `out` (the others'
// `out` is ignored).
Profile calibrate_cpu(const CalibrateOptions& o, MPI_Comm world, std::FILE* out);

}  // namespace shardplan
