#include "tools/rank_errors.h"

#include <fmt/core.h>
#include <mpi.h>

#include <cstdio>
#include <exception>

#include "core/error.h"

namespace shardplan::cli {

void abort_job_on_error(int rank, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    const auto* input = dynamic_cast<const InputError*>(&e);
    fmt::print(stderr, "shardplan: error: rank {}: {}\n", rank, e.what());
    if (input != nullptr && !input->hint.empty()) fmt::print(stderr, "  hint: {}\n", input->hint);
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(ExitCode::user_error));
  }
}

}  // namespace shardplan::cli
