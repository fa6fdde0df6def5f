// Running this shardplan binary again as a child process, for the subcommands that drive others
// (demo runs calibrate and execute, which start their own MPI jobs: one process cannot initialise
// MPI twice).
#pragma once

#include <string>
#include <vector>

namespace shardplan::cli {

// Runs `shardplan args...` (this very executable) with stdout and stderr written to `log_file`
// (replaced), waits, and returns its exit code (128 + the signal when a signal ended it). It ends
// with this process (spawn_tied_child).
// InputError when it cannot be started.
int run_shardplan(const std::vector<std::string>& args, const std::string& log_file);

}  // namespace shardplan::cli
