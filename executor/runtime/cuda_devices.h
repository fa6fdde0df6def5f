// Whether this process can use a CUDA device, asked before a `--backend cuda` command starts any
// rank: with none, the command fails at once, naming what cudaGetDeviceCount said. A build without
// the CUDA backend (no nvcc when it was configured) answers from executor/no_cuda/.
#pragma once

#include <string>

namespace shardplan {

struct CudaDeviceQuery {
  int count = 0;      // devices visible to this process
  std::string error;  // why none: cudaGetDeviceCount's error, or that the build has no CUDA backend
};

CudaDeviceQuery query_cuda_devices();

// InputError on `option` ("--backend") when query_cuda_devices() finds no device:
// "cuda: no CUDA device (<error>)".
void require_cuda_device(const char* option);

}  // namespace shardplan
