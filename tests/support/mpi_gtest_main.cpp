// GoogleTest main for tests run under mpirun: MPI is initialised around the whole run, only
// rank 0 prints results, and the exit code is non-zero on every rank if any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"

int main(int argc, char** argv) {
  autotrain::MpiSession mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) std::fprintf(stderr, "[rank %d] some tests failed on this rank\n", mpi.rank());
  return any_failed;
}
