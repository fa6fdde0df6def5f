#include "executor/cuda/node_device.h"

#include <mpi.h>

#include <string>

#include "core/error.h"
#include "executor/cuda/cuda_check.h"

namespace shardplan {

int node_device() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0, local_ranks = 1, world_rank = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int devices = 0;
  SHARDPLAN_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (local_ranks > devices)
    throw InputError("--backend", "",
                     "cuda: rank " + std::to_string(world_rank) + "'s node runs " +
                         std::to_string(local_ranks) + " ranks but has " + std::to_string(devices) +
                         " CUDA devices; each rank needs its own",
                     "run at most " + std::to_string(devices) + " ranks per node");
  return local;
}

}  // namespace shardplan
