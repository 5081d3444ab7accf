// check_node_local (src/zero/nvme_state.hpp): the ranks of one host may share an nvme_path
// folder; ranks of two hosts may not. The test ranks all run on this machine, so two hosts are
// faked by the host names the ranks pass. Run under mpirun -np 1..4.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <memory>
#include <string>

#include "../../src/zero/nvme_state.hpp"  // internal to the zero layer
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::zero::nvme_folder_mpi_test {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<Communicator> world() {
  return make_communicator(CommBackend::mpi, MPI_COMM_WORLD, CommOptions{});
}

// The CollectiveError check_node_local throws ("" when none).
std::string refusal(const fs::path& folder, Communicator& comm, const std::string& host = {}) {
  try {
    check_node_local(folder, comm, host);
  } catch (const CollectiveError& error) {
    return error.what();
  }
  return {};
}

TEST(CheckNodeLocal, AcceptsAFolderTheRanksOfOneHostShare) {
  auto comm = world();
  testing::SharedTempDir dir;
  EXPECT_EQ(refusal(dir.path(), *comm), "");
  comm->barrier();
  EXPECT_TRUE(fs::is_empty(dir.path()));  // the markers are gone
}

TEST(CheckNodeLocal, RefusesAFolderRanksOfTwoHostsShare) {
  auto comm = world();
  if (comm->size() < 2) GTEST_SKIP() << "needs ranks on two (fake) hosts";
  testing::SharedTempDir dir;
  const std::string error = refusal(dir.path(), *comm, "node" + std::to_string(comm->rank() % 2));
  EXPECT_EQ(error.rfind("nvme_path " + dir.path().string() + ": hosts node", 0), 0u) << error;
  EXPECT_NE(error.find("node0"), std::string::npos) << error;
  EXPECT_NE(error.find("node1"), std::string::npos) << error;
  EXPECT_NE(error.find("write %r in nvme_path"), std::string::npos) << error;
  comm->barrier();
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(CheckNodeLocal, AcceptsAFolderPerRankOnASharedFileSystem) {
  auto comm = world();
  testing::SharedTempDir dir;
  const fs::path folder = nvme_rank_folder((dir / "rank%r").string(), comm->rank());
  EXPECT_EQ(folder, dir / ("rank" + std::to_string(comm->rank())));
  EXPECT_EQ(refusal(folder, *comm, "node" + std::to_string(comm->rank())), "");
}

TEST(CheckNodeLocal, NamesAFolderMissingOnOneRank) {
  auto comm = world();
  testing::SharedTempDir dir;
  const int last = comm->size() - 1;
  const fs::path folder = comm->rank() == last ? dir / "missing" : dir.path();
  const std::string error = refusal(folder, *comm);
  EXPECT_EQ(error.rfind("nvme_path " + (dir / "missing").string() + ": no such folder on host ", 0),
            0u)
      << error;
  EXPECT_NE(error.find("(rank " + std::to_string(last) + ")"), std::string::npos) << error;
}

}  // namespace
}  // namespace autotrain::zero::nvme_folder_mpi_test
