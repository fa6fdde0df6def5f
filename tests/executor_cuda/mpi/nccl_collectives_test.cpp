// Each NCCL collective of `calibrate --backend cuda` gives what its MPI version gives on 2 ranks
// (a GPU each; skipped without): rank r's send buffer holds (r+1)·1000 + i (send_value), so the
// CPU driver's MPI call on host buffers is the reference, element for element.
#include "calibrate/cuda/nccl_collectives.h"

#include <mpi.h>

#include <catch2/catch.hpp>
#include <vector>

#include "calibrate/calibrate_collective.h"
#include "executor/cuda/node_device.h"
#include "tests/executor_cuda/cuda_test_device.h"

namespace shardplan {
namespace {

TEST_CASE("nccl collectives: the MPI driver's results on GPU buffers", "[cuda]") {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world != 2) return;
  SHARDPLAN_SKIP_WITHOUT_CUDA_DEVICE(2);
  CudaContext ctx(node_device(), MatmulPrecision::fp32);
  DeviceMemory memory(ctx);
  TensorAllocator alloc("test", 0, &memory);
  CudaKernels<float> kernels(ctx, alloc);
  NcclCollectiveRunner nccl(MPI_COMM_WORLD, ctx, kernels, alloc);
  MpiCollectiveRunner mpi(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const CollectiveBench* b : collective_benches())
    for (int64_t count : {1, 3, 1000}) {
      INFO(enum_name(b->collective, kCollectiveNames) << " count " << count);
      const std::vector<float> want = run_collective_once(mpi, *b, count);
      const std::vector<float> got = run_collective_once(nccl, *b, count);
      // Broadcast's root keeps its receive buffer as it was (MPI) or gets its own data (NCCL).
      if (b->collective != Collective::broadcast || rank != 0) CHECK(got == want);
    }
}

}  // namespace
}  // namespace shardplan
