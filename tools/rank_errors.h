// How a command running on many MPI ranks fails: an exception on any rank (bad input, running out
// of memory, a failed CUDA, cuBLAS or NCCL call, a bug) prints "shardplan: error: rank R: <cause>"
// (and its hint) and calls MPI_Abort(MPI_COMM_WORLD, 1), which ends every rank — none is left
// blocked in a receive or a collective — and makes mpirun exit 1.
#pragma once

#include <functional>

namespace shardplan::cli {

// Runs `body` on this rank; on an exception, reports it and aborts the job.
void abort_job_on_error(int rank, const std::function<void()>& body);

}  // namespace shardplan::cli
