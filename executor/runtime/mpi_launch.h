// Running on MPI ranks from the command line: whether mpirun started this process, MPI's lifetime
// as an object, and re-running this very command under `mpirun -np N` (calibrate, execute).
#pragma once

#include <mpi.h>

namespace shardplan {

// True when a launcher started this process as one rank of several: Open MPI's mpirun
// (OMPI_COMM_WORLD_SIZE), MPICH's and Slurm's (PMI_SIZE), or any PMIx launcher (PMIX_RANK).
bool started_by_mpirun();

// MPI_Init_thread on construction, MPI_Finalize on destruction. One per process: MPI cannot be
// initialised twice. Multiple threads: the main thread runs the work, the watchdog's thread
// (watchdog.h) answers the other ranks' queries and may abort the job; where MPI does not
// provide MPI_THREAD_MULTIPLE the watchdog only reports its own rank.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// Runs this process's own command line (/proc/self/cmdline, the executable from /proc/self/exe)
// again as `mpirun -np ranks ...` (with --oversubscribe under Open MPI when ranks exceed the
// cores), waits for it and returns its exit code (2 when it was killed). mpirun ends with this
// process (spawn_tied_child): killing the command ends mpirun and its ranks. InputError naming
// "mpirun" when mpirun cannot be run.
int rerun_under_mpirun(int ranks);

}  // namespace shardplan
