#include "tools/subprocess.h"

#include <filesystem>

#include "core/error.h"
#include "executor/runtime/child_process.h"

namespace shardplan::cli {

int run_shardplan(const std::vector<std::string>& args, const std::string& log_file) {
  std::vector<std::string> command{std::filesystem::read_symlink("/proc/self/exe").string()};
  command.insert(command.end(), args.begin(), args.end());
  const pid_t pid = spawn_tied_child(command, log_file);
  if (pid < 0)
    throw InputError(command[0], "", "cannot start shardplan again for " + args.front());
  const ChildExit end = wait_for_exit(pid);
  return end.signal != 0 ? 128 + end.signal : end.code;
}

}  // namespace shardplan::cli
