// A failed call into the GPU stack (CUDA runtime, cuBLAS, NCCL) as a typed exception: the call as
// written, where it was made, the library's error and the rank it failed on. The execute and
// calibrate drivers print it as "shardplan: error: rank R: <what>" and abort the job, as they do
// for any error on a rank. The checks themselves (one per library) are in cuda/cuda_check.h.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace shardplan {

struct DeviceError : std::runtime_error {
  int rank = -1;  // MPI_COMM_WORLD rank of the process, -1 when MPI was not started
  DeviceError(const std::string& message, int rank_) : std::runtime_error(message), rank(rank_) {}
};

// "<call> at <file>:<line>: <error>", the file shown from the source tree's top folder
// ("executor/cuda/x.cpp", not the build machine's absolute path).
std::string device_status_message(std::string_view call, std::string_view file, int line,
                                  std::string_view error);

// Throws DeviceError with device_status_message and this process's rank.
[[noreturn]] void throw_device_error(std::string_view call, std::string_view file, int line,
                                     std::string_view error);

}  // namespace shardplan
