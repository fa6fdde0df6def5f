#include "executor/runtime/mpi_launch.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "executor/runtime/child_process.h"

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
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
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
  const pid_t pid = spawn_tied_child(args);
  if (pid < 0)
    throw InputError("mpirun", "", "cannot run " + args[0],
                     "install Open MPI, or start shardplan under mpirun -np N yourself");
  const ChildExit end = wait_for_exit(pid);
  return end.signal != 0 ? static_cast<int>(ExitCode::internal_error) : end.code;
}

}  // namespace shardplan
