// One GPU per rank: which device of its node a rank uses.
#pragma once

namespace shardplan {

// This rank's index among the ranks of its node (MPI's shared-memory split of MPI_COMM_WORLD), the
// device it uses. Collective over MPI_COMM_WORLD. InputError naming --backend when the node runs
// more ranks than it has CUDA devices.
int node_device();

}  // namespace shardplan
