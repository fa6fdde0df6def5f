#include "executor/runtime/mpi_launch.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

extern char** environ;

namespace shardplan {

namespace {

// This process's arguments as it was started, argv[0] replaced by the executable's real path.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> args;
  for (size_t begin = 0; begin < all.size();) {
    const size_t end = all.find('\0', begin);
    args.push_back(all.substr(begin, end - begin));
    begin = end == std::string::npos ? all.size() : end + 1;
  }
  if (!args.empty()) args[0] = std::filesystem::read_symlink("/proc/self/exe").string();
  return args;
}

}  // namespace

bool started_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

MpiSession::MpiSession() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  MPI_Finalize();
}

int rerun_under_mpirun(int ranks) {
  std::vector<std::string> args{SHARDPLAN_MPIEXEC, "-np", std::to_string(ranks)};
#ifdef OMPI_MAJOR_VERSION
  if (static_cast<unsigned>(ranks) > std::thread::hardware_concurrency())
    args.push_back("--oversubscribe");
#endif
  for (auto& a : own_command_line()) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw InputError("mpirun", "", "cannot run " + args[0],
                     "install Open MPI, or start shardplan under mpirun -np N yourself");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return static_cast<int>(ExitCode::internal_error);
  return WEXITSTATUS(status);
}

}  // namespace shardplan
