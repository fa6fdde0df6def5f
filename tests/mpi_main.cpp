// The Catch2 (v2) main of the MPI test binaries, which CTest runs under mpirun: MPI is initialised
// around the session, and every rank runs the same test cases in the same order.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int failed = Catch::Session().run(argc, argv);
  MPI_Finalize();
  return failed;
}
