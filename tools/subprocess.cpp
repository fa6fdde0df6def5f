#include "tools/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"

extern char** environ;

namespace shardplan::cli {

int run_shardplan(const std::vector<std::string>& args, const std::string& log_file) {
  std::vector<std::string> command{std::filesystem::read_symlink("/proc/self/exe").string()};
  command.insert(command.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log_file.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  std::fflush(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (spawned != 0)
    throw InputError(command[0], "", "cannot start shardplan again for " + args.front());
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 128;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace shardplan::cli
