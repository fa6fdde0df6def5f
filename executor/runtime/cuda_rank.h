// The CUDA backend's RankRuntime (rank_runtime.h) for one rank: the rank's own GPU (its rank
// among its node's ranks), CudaKernels on the GPU's memory through one accounting allocator, a
// CUDA stream per program stream with events for stamps, an NCCL communicator per parallel group
// (its unique id broadcast over the group's MPI communicator), and a two-rank NCCL communicator
// and stream per pipeline link. Plain C++: callers need no CUDA headers; a build without the CUDA
// backend has the declarations only, and cuda_runtime throws.
#pragma once

#include <memory>

#include "core/schedule.h"

namespace shardplan {

class RankRuntime;

// fp32 GEMMs as IEEE fp32, or with TF32 tensor cores (inputs rounded to a 10-bit mantissa, fp32
// accumulation: NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020, "TF32").
enum class MatmulPrecision { fp32, tf32 };

struct CudaSettings {
  MatmulPrecision matmul = MatmulPrecision::fp32;
};

// Collective over MPI_COMM_WORLD. InputError when this node runs more ranks than it has GPUs.
std::unique_ptr<RankRuntime> cuda_runtime(const Program& p, const CudaSettings& settings);

}  // namespace shardplan
