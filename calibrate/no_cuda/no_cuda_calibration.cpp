// A build without the CUDA backend.
#include "calibrate/calibrate_cuda.h"

#include "core/error.h"

namespace shardplan {

Profile calibrate_cuda(const CalibrateOptions&, const CudaSettings&, MPI_Comm, std::FILE*) {
  throw InputError("--backend", "",
                   "cuda: no CUDA device (this build has no CUDA backend: it was configured "
                   "without nvcc, cuBLAS and NCCL, or with -DSHARDPLAN_CUDA=OFF)",
                   "use --backend cpu");
}

}  // namespace shardplan
