#include "executor/runtime/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

namespace shardplan {

pid_t spawn_tied_child(const std::vector<std::string>& argv, const std::string& log_file) {
  // Everything the child needs is made before fork: between fork and exec only async-signal-safe
  // calls (POSIX.1-2017 fork(), "Application usage"), as this process may run other threads.
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  // The child writes errno here when it cannot start the command; exec closes it otherwise.
  int failed[2];
  if (pipe2(failed, O_CLOEXEC) != 0) return -1;
  const pid_t parent = getpid();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(failed[0]);
    int error = 0;
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(128 + SIGTERM);
    if (!log_file.empty()) {
      const int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) error = errno;
    }
    if (error == 0) {
      execvp(c_args[0], c_args.data());
      error = errno;
    }
    (void)!write(failed[1], &error, sizeof error);
    _exit(127);
  }
  close(failed[1]);
  int error = 0;
  ssize_t got = 0;
  if (pid > 0) {
    while ((got = read(failed[0], &error, sizeof error)) < 0 && errno == EINTR) {
    }
  } else {
    error = errno;
  }
  close(failed[0]);
  if (pid > 0 && got <= 0) return pid;  // started
  if (pid > 0) wait_for_exit(pid);
  errno = error;
  return -1;
}

ChildExit wait_for_exit(pid_t pid) {
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (got != pid) return {0, SIGKILL};  // not ours to wait for: gone
  if (WIFEXITED(status)) return {WEXITSTATUS(status), 0};
  return {0, WTERMSIG(status)};
}

}  // namespace shardplan
