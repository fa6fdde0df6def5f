// How a failed CUDA, cuBLAS or NCCL call is reported (executor/runtime/device_error.h): the call as
// written, the file from the source tree's top, the line and the library's error.
#include "executor/runtime/device_error.h"

#include <catch2/catch.hpp>

namespace shardplan {
namespace {

TEST_CASE("device status message: call, file from the tree's top, line, error", "[executor]") {
  CHECK(device_status_message("cudaMalloc(&p, bytes)", "/work/src/executor/cuda/device_memory.cpp",
                              42, "cudaErrorMemoryAllocation: out of memory") ==
        "cudaMalloc(&p, bytes) at executor/cuda/device_memory.cpp:42: "
        "cudaErrorMemoryAllocation: out of memory");
  CHECK(device_status_message("f()", "other.cpp", 7, "bad") == "f() at other.cpp:7: bad");
}

TEST_CASE("device error: thrown with the message, and no rank outside MPI", "[executor]") {
  try {
    throw_device_error("ncclAllReduce(...)", "executor/cuda/nccl_comm.cpp", 9,
                       "unhandled system error");
    FAIL("no exception");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()) ==
          "ncclAllReduce(...) at executor/cuda/nccl_comm.cpp:9: unhandled system error");
    CHECK(e.rank == -1);
  }
}

}  // namespace
}  // namespace shardplan
