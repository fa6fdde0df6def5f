// The whole job's ranks, as the interpreter needs them outside any parallel group and any stream:
// which rank this process is before its program exists, a barrier before a step, the step's
// scalars reduced over every rank (the slowest rank's time, the summed loss), and a value
// broadcast from one rank (a loaded checkpoint's optimizer step). Part of the runtime seam beside
// rank_runtime.h: the interpreter calls these, never MPI; mpi_world.cpp runs them over
// MPI_COMM_WORLD, which every backend starts from (the CUDA one bootstraps NCCL over it).
#pragma once

#include <cstdint>

#include "executor/runtime/wait_scope.h"

namespace shardplan {

// This process's rank in the job and the job's ranks. MPI must be running.
int world_rank();
int world_size();
// world_rank(), or -1 when MPI is not running (not started yet, or finalized): for error reports
// that may come from anywhere.
int world_rank_or_none();

// Returns once every rank has called it.
void world_barrier();
// `x` reduced over every rank, the result on every rank.
double world_max(double x);
double world_sum(double x);
// Rank `root`'s `x` on every rank.
int64_t world_broadcast(int64_t x, int root);

// The next wait over every rank, for its WaitScope: group "world", numbered in the order every
// rank makes them (the collectives above, and the report's and checkpoints' gathers).
WaitSite world_wait(WaitKind kind);

}  // namespace shardplan
