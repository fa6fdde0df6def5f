#include "executor/cuda/cuda_context.h"

#include "executor/cuda/cuda_check.h"

namespace shardplan {

namespace {
int selected(int device) {
  SHARDPLAN_CUDA_CHECK(cudaSetDevice(device));
  return device;
}
}  // namespace

CudaContext::CudaContext(int device, MatmulPrecision precision)
    : device_(selected(device)), current_(compute_.get()) {
  SHARDPLAN_CUBLAS_CHECK(cublasSetMathMode(cublas_.get(), precision == MatmulPrecision::tf32
                                                              ? CUBLAS_TF32_TENSOR_OP_MATH
                                                              : CUBLAS_DEFAULT_MATH));
}

}  // namespace shardplan
