// A build without the CUDA backend.
#include "core/error.h"
#include "executor/runtime/cuda_rank.h"
#include "executor/runtime/rank_runtime.h"

namespace shardplan {

std::unique_ptr<RankRuntime> cuda_runtime(const Program&, const CudaSettings&) {
  throw InputError("--backend", "",
                   "cuda: no CUDA device (this build has no CUDA backend: it was configured "
                   "without nvcc, cuBLAS and NCCL, or with -DSHARDPLAN_CUDA=OFF)",
                   "use --backend cpu");
}

}  // namespace shardplan
