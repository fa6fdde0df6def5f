// `shardplan calibrate --backend cuda`: cuBLAS GEMMs over the shapes of the given models' layers
// (the CPU calibration's layer_gemm_calls), the GPU's memory bandwidth (a device-to-device copy),
// and every NCCL collective over sizes and group sizes through the CPU calibration's driver
// (calibrate_collective.h), one MPI rank per GPU, fitted into a Profile with backend "cuda".
// Rank 0 prints the tables as it goes. Defined in cuda/calibrate_cuda.cpp; a build without the
// CUDA backend throws.
#pragma once

#include <mpi.h>

#include <cstdio>

#include "calibrate/calibrate_options.h"
#include "core/profile.h"
#include "executor/runtime/cuda_rank.h"

namespace shardplan {

// Every rank of `world` calls this and gets the same profile; rank 0 prints to `out`.
Profile calibrate_cuda(const CalibrateOptions& o, const CudaSettings& settings, MPI_Comm world,
                       std::FILE* out);

}  // namespace shardplan
