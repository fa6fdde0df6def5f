// `shardplan calibrate --backend cpu`: GEMMs and memory-bound kernels over the shapes of the given
// models' layers, STREAM, and every collective over sizes and group sizes, on MPI ranks (one per
// core), fitted into a Profile. Rank 0 prints nccl-tests-style tables as it goes.
#pragma once

#include <mpi.h>

#include <cstdio>

#include "calibrate/calibrate_options.h"
#include "core/profile.h"

namespace shardplan {

// Every rank of `world` calls this and gets the same profile; rank 0 prints to `out` (the others'
// `out` is ignored).
Profile calibrate_cpu(const CalibrateOptions& o, MPI_Comm world, std::FILE* out);

}  // namespace shardplan
