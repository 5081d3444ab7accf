// The peer probe under mpirun with 1..4 ranks: every rank answers, even one waiting in a
// collective; a stopped rank (SIGSTOP, as a hung process or node) is named with its host.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "autotrain/core/mpi.hpp"
#include "autotrain/core/peer_probe.hpp"

namespace autotrain::peer_probe_mpi_test {
namespace {

// Whether process `pid` is stopped (state T in /proc/<pid>/stat).
bool stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'T';
}

TEST(PeerProbe, EveryRankAnswersWhileTheOthersWaitInACollective) {
  PeerProbe probe(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    EXPECT_TRUE(probe.silent_ranks(5.0).empty());
    const std::string report = probe.report(5.0);
    if (world_size() > 1) {
      EXPECT_NE(report.find("every rank answered a probe within 5 s"), std::string::npos) << report;
    } else {
      EXPECT_EQ(report, "");
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // the others wait here, and answer from the probe's thread
}

TEST(PeerProbe, NamesAStoppedRankAndItsHost) {
  const int size = world_size();
  if (size < 2) GTEST_SKIP() << "needs 2 ranks";
  PeerProbe probe(MPI_COMM_WORLD);
  const int rank = world_rank();
  pid_t last_pid = getpid();
  MPI_Bcast(&last_pid, sizeof(pid_t), MPI_BYTE, size - 1, MPI_COMM_WORLD);
  if (rank == size - 1) std::raise(SIGSTOP);  // resumed by rank 0 below
  if (rank == 0) {
    for (int i = 0; i < 2000 && !stopped(last_pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(stopped(last_pid));
    EXPECT_EQ(probe.silent_ranks(1.0), std::vector<int>{size - 1});
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    const std::string report = probe.report(1.0);
    const std::string expected = "; rank " + std::to_string(size - 1) + " (on " + host +
                                 ") did not answer a probe within 1 s: stopped, crashed or cut "
                                 "off from the network";
    EXPECT_EQ(report, expected);
    kill(last_pid, SIGCONT);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Resumed, it answers again (the earlier rounds' answers are told apart from this one's).
  if (rank == 0) {
    EXPECT_TRUE(probe.silent_ranks(5.0).empty());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(PeerProbe, NoReportWithoutAProbe) {
  EXPECT_EQ(peer_probe_report(10), "");
}

}  // namespace
}  // namespace autotrain::peer_probe_mpi_test
