// A build without the CUDA backend.
#include "core/error.h"
#include "executor/cuda_rank.h"
#include "executor/rank_runtime.h"

namespace shardplan {

std::unique_ptr<RankRuntime> cuda_runtime(const Program&, const CudaSettings&) {
  throw InputError("--backend", "",
                   "cuda: no CUDA device (this build has no CUDA backend: nvcc was not found when "
                   "it was configured)",
                   "use --backend cpu");
}

}  // namespace shardplan
