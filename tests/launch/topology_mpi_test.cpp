// The real mapping under mpirun (run with -np 1..4): every rank discovers, then the ranks compare
// what they found with each other.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/launch/discover.hpp"

namespace autotrain::topology_mpi_test {
namespace {

// Every rank's `text`, in rank order.
std::vector<std::string> gather_all(const std::string& text) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr int kWidth = 256;
  std::string padded = text;
  padded.resize(kWidth, '\0');
  std::string all(static_cast<size_t>(kWidth * size), '\0');
  MPI_Allgather(padded.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> texts;
  for (int r = 0; r < size; ++r)
    texts.push_back(all.substr(static_cast<size_t>(r * kWidth), kWidth).c_str());
  return texts;
}

struct Row {
  std::string host;
  int local_rank;
  int local_world_size;
  int node_rank;
  int num_nodes;
};

std::vector<Row> gather_rows(const Topology& t) {
  std::vector<Row> rows;
  for (const std::string& line :
       gather_all(cat(t.hostname, " ", t.local_rank, " ", t.local_world_size, " ", t.node_rank, " ",
                      t.num_nodes))) {
    std::istringstream in(line);
    Row row{};
    in >> row.host >> row.local_rank >> row.local_world_size >> row.node_rank >> row.num_nodes;
    rows.push_back(row);
  }
  return rows;
}

TEST(TopologyMpi, RankAndWorldSizeComeFromMpi) {
  const Topology t = discover_topology(MPI_COMM_WORLD);
  int rank = -1;
  int size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(t.rank, rank);
  EXPECT_EQ(t.world_size, size);
  EXPECT_EQ(t.master_port, kDefaultMasterPort);
  // Local rank picks among the visible GPUs; too few GPUs for every local rank means CPU.
  const int expected_device = t.visible_gpus >= t.local_world_size ? t.local_rank : -1;
  EXPECT_EQ(t.device, expected_device) << t.visible_gpus << " GPU(s) visible";
}

TEST(TopologyMpi, LocalRanksAreContiguousAndUniquePerNode) {
  const Topology t = discover_topology(MPI_COMM_WORLD);
  std::map<std::string, std::vector<int>> local_ranks_by_host;
  std::map<std::string, int> local_size_by_host;
  for (const Row& row : gather_rows(t)) {
    local_ranks_by_host[row.host].push_back(row.local_rank);
    local_size_by_host[row.host] = row.local_world_size;
  }
  for (const auto& [host, local_ranks] : local_ranks_by_host) {
    // Gathered in world-rank order, so local ranks must read 0, 1, 2, ... on every host.
    for (size_t i = 0; i < local_ranks.size(); ++i)
      EXPECT_EQ(local_ranks[i], static_cast<int>(i)) << host;
    EXPECT_EQ(local_size_by_host[host], static_cast<int>(local_ranks.size())) << host;
  }
}

TEST(TopologyMpi, NodeRanksFollowTheLowestRankOfEachNode) {
  const Topology t = discover_topology(MPI_COMM_WORLD);
  const std::vector<Row> rows = gather_rows(t);
  std::map<std::string, int> node_of_host;
  int next_node = 0;
  for (const Row& row : rows) {
    if (!node_of_host.contains(row.host)) node_of_host[row.host] = next_node++;
    EXPECT_EQ(row.node_rank, node_of_host[row.host]) << row.host;
  }
  for (const Row& row : rows) EXPECT_EQ(row.num_nodes, next_node);
}

TEST(TopologyMpi, MasterAddressIsTheSameOnEveryRank) {
  const Topology t = discover_topology(MPI_COMM_WORLD, {.master_port = 31234});
  ASSERT_FALSE(t.master_addr.empty());
  for (const std::string& address : gather_all(t.master_addr)) EXPECT_EQ(address, t.master_addr);
  EXPECT_EQ(t.master_port, 31234);
}

TEST(TopologyMpi, ExportSetsTheTorchrunVariables) {
  const Topology t = discover_topology(MPI_COMM_WORLD, {.master_port = 29511});
  export_topology(t);
  const auto value = [](const char* name) {
    const char* text = std::getenv(name);
    return text == nullptr ? std::string("<unset>") : std::string(text);
  };
  EXPECT_EQ(value("RANK"), cat(t.rank));
  EXPECT_EQ(value("LOCAL_RANK"), cat(t.local_rank));
  EXPECT_EQ(value("WORLD_SIZE"), cat(t.world_size));
  EXPECT_EQ(value("LOCAL_WORLD_SIZE"), cat(t.local_world_size));
  EXPECT_EQ(value("NODE_RANK"), cat(t.node_rank));
  EXPECT_EQ(value("MASTER_ADDR"), t.master_addr);
  EXPECT_EQ(value("MASTER_PORT"), "29511");
  // The exported variables are claims too: discovering again must agree with them.
  EXPECT_NO_THROW(discover_topology(MPI_COMM_WORLD));
}

TEST(TopologyMpi, SaysWhenItReplacesTheEnvironmentsMasterAddressAndPort) {
  const EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "MASTER_ADDR") return "10.9.9.9";
    if (name == "MASTER_PORT") return "12345";
    return std::nullopt;
  };
  ::testing::internal::CaptureStdout();  // log::info's stream
  const Topology t = discover_topology(MPI_COMM_WORLD, {.master_port = 29512}, env);
  std::fflush(stdout);
  const std::string said = ::testing::internal::GetCapturedStdout();
  if (t.rank == 0) {
    EXPECT_NE(
        said.find("MASTER_ADDR=10.9.9.9 MASTER_PORT=12345 from the environment are replaced by " +
                  t.master_addr + ":29512"),
        std::string::npos)
        << said;
  } else {
    EXPECT_EQ(said.find("MASTER_ADDR"), std::string::npos) << said;  // said once, by rank 0
  }
}

TEST(TopologyMpi, LauncherVariablesOfTheRealLaunchAgree) {
  const Topology t = discover_topology(MPI_COMM_WORLD);
  const char* ompi_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (ompi_rank != nullptr) {
    EXPECT_EQ(std::string(ompi_rank), cat(t.rank));
    EXPECT_NE(t.launcher.find("Open MPI"), std::string::npos) << t.launcher;
  }
}

TEST(TopologyMpi, AMismatchOnTheLastRankFailsEveryRankNamingIt) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Only the last rank sees a wrong SLURM_PROCID; the others see a consistent one.
  const int claimed = rank == size - 1 ? rank + 7 : rank;
  const EnvLookup env = environment_from({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", cat(claimed)}});
  try {
    discover_topology(MPI_COMM_WORLD, {}, env);
    ADD_FAILURE() << "expected a CollectiveError on every rank";
  } catch (const CollectiveError& error) {
    const std::string message = error.what();
    EXPECT_NE(
        message.find(cat("SLURM_PROCID=", size - 1 + 7, " (Slurm) but MPI rank is ", size - 1)),
        std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace autotrain::topology_mpi_test
