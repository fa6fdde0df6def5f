// A build without the CUDA backend.
#include "executor/calibrate_cuda.h"

#include "core/error.h"

namespace shardplan {

Profile calibrate_cuda(const CalibrateOptions&, const CudaSettings&, MPI_Comm, std::FILE*) {
  throw InputError("--backend", "",
                   "cuda: no CUDA device (this build has no CUDA backend: nvcc was not found when "
                   "it was configured)",
                   "use --backend cpu");
}

}  // namespace shardplan
