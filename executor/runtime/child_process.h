// Child processes that end with their parent: calibrate and execute re-run themselves under
// mpirun, demo runs shardplan again. A child left running when its parent is killed (mpirun and
// every rank, finishing the job and writing --out 20 s later) is an orphan the user did not ask for.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace shardplan {

// Starts `argv` (argv[0] a path or a name on PATH) as a child that receives SIGTERM when this
// process ends, however it ends (Linux's PR_SET_PDEATHSIG; mpirun answers SIGTERM by ending its
// ranks). With `log_file`, its stdout and stderr go to that file (replaced). Returns its pid, or
// -1 when it cannot be started (errno set).
pid_t spawn_tied_child(const std::vector<std::string>& argv, const std::string& log_file = "");

// How a child ended: its exit code, or the signal that ended it.
struct ChildExit {
  int code = 0;
  int signal = 0;  // 0: it exited
};

// Waits for `pid` to end.
ChildExit wait_for_exit(pid_t pid);

}  // namespace shardplan
