// Backend selection, the padded layout, and the watchdog (including a real job that hangs).
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/core/watchdog.hpp"
#include "test_support.hpp"

namespace autotrain::comm_test {
namespace {

using autotrain::testing::error_of;

TEST(CommBackend, ParsesEveryNameAndRejectsOthersNamingTheSource) {
  EXPECT_EQ(parse_comm_backend("gloo", "--comm-backend"), CommBackend::gloo);
  EXPECT_EQ(parse_comm_backend("auto", "--comm-backend"), CommBackend::automatic);
  const std::string message = error_of([] { parse_comm_backend("nickel", "distributed.backend"); });
  EXPECT_NE(message.find("distributed.backend: unknown communicator backend 'nickel'"),
            std::string::npos)
      << message;
}

TEST(CommBackend, AutoPicksMpiOnARankWithoutGpu) {
  Topology cpu_rank;
  EXPECT_EQ(resolve_comm_backend(CommBackend::automatic, cpu_rank), CommBackend::mpi);
}

TEST(CommBackend, NcclOnARankWithoutGpuSuggestsGlooOrMpi) {
  Topology cpu_rank;
  cpu_rank.hostname = "node7";
  const std::string message = error_of([&] { resolve_comm_backend(CommBackend::nccl, cpu_rank); });
  EXPECT_NE(message.find("'nccl' was requested"), std::string::npos) << message;
  EXPECT_NE(message.find("gloo or mpi"), std::string::npos) << message;
  EXPECT_NE(message.find(build_has_nccl() ? "has no GPU" : "built without NCCL"), std::string::npos)
      << message;
}

TEST(CommBackend, FactoryRefusesAnUnresolvedAutoBackend) {
  const std::string message =
      error_of([] { make_communicator(CommBackend::automatic, MPI_COMM_NULL, CommOptions{}); });
  EXPECT_NE(message.find("must be resolved first"), std::string::npos) << message;
}

TEST(ReduceOp, ParsesSumAvgMaxAndRejectsOthers) {
  EXPECT_EQ(parse_reduce_op("avg", "--op"), ReduceOp::avg);
  EXPECT_NE(
      error_of([] { parse_reduce_op("min", "--redop"); }).find("--redop: unknown reduction 'min'"),
      std::string::npos);
}

TEST(ShardLayout, PadsToEqualPartsAndMarksTheTailAsPadding) {
  const ShardLayout layout{13, 4};  // parts of 4: [0,4) [4,8) [8,12) [12,13)+3 padding
  EXPECT_EQ(layout.part(), 4u);
  EXPECT_EQ(layout.padded_count(), 16u);
  EXPECT_EQ(layout.begin(3), 12u);
  EXPECT_EQ(layout.valid(2), 4u);
  EXPECT_EQ(layout.valid(3), 1u);
  const ShardLayout tiny{1, 4};  // ranks 1..3 own only padding
  EXPECT_EQ(tiny.part(), 1u);
  EXPECT_EQ(tiny.valid(0), 1u);
  EXPECT_EQ(tiny.valid(3), 0u);
  EXPECT_EQ((ShardLayout{0, 3}).padded_count(), 0u);
}

// Records what the watchdog reports instead of aborting the test process.
struct RecordedExpiry {
  std::mutex mutex;
  std::vector<std::string> messages;
  Watchdog::ExpiryHandler handler() {
    return [this](const std::string& message) {
      std::lock_guard lock(mutex);
      messages.push_back(message);
    };
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
};

TEST(Watchdog, ReportsOperationSequenceSizeAndRankOfACollectiveOlderThanTheTimeout) {
  RecordedExpiry expiry;
  {
    Watchdog watchdog("mpi", 3, 0.2, expiry.handler());
    watchdog.end(watchdog.begin("barrier", 0));
    watchdog.begin("allreduce", 4096);  // never ends
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  ASSERT_EQ(expiry.count(), 1u);
  const std::string& message = expiry.messages[0];
  EXPECT_NE(message.find("mpi allreduce #2 (4096 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("on rank 3"), std::string::npos) << message;
  EXPECT_NE(message.find("comm_timeout = 0.2 s"), std::string::npos) << message;
}

TEST(Watchdog, StaysQuietWhileCollectivesFinishWithinTheTimeout) {
  RecordedExpiry expiry;
  {
    Watchdog watchdog("gloo", 0, 0.2, expiry.handler());
    for (int i = 0; i < 10; ++i) {
      const uint64_t sequence = watchdog.begin("allreduce", 8);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      watchdog.end(sequence);
    }
  }
  EXPECT_EQ(expiry.count(), 0u);
}

TEST(Watchdog, RejectsANonPositiveTimeout) {
  EXPECT_NE(
      error_of([] { Watchdog("mpi", 0, 0.0, [](const std::string&) {}); }).find("comm_timeout"),
      std::string::npos);
}

// Run by WatchdogAbortsTheJob below, under mpirun: rank 1 skips the allreduce rank 0 waits in.
TEST(WatchdogChild, RankOneSkipsAnAllreduce) {
  const char* backend = std::getenv("AUTOTRAIN_COMM_WATCHDOG_CHILD");
  if (backend == nullptr) GTEST_SKIP() << "only run as the child job of WatchdogAbortsTheJob";
  MpiSession mpi(nullptr, nullptr);
  CommOptions options;
  options.timeout_seconds = 2;
  auto comm = make_communicator(parse_comm_backend(backend, "child"), MPI_COMM_WORLD, options);
  std::vector<float> gradients(1000, 1.0f);
  if (comm->rank() != 1) comm->allreduce(gradients, ReduceOp::sum);
  std::this_thread::sleep_for(std::chrono::seconds(60));  // never reached on rank 0
}

// Run by WatchdogIgnoresCompletedCollectives below: a collective that completed but whose
// handle is still held (a prefetch nobody used) outlives comm_timeout without an abort.
TEST(WatchdogChild, HoldsACompletedHandlePastTheTimeout) {
  const char* backend = std::getenv("AUTOTRAIN_COMM_WATCHDOG_HOLD");
  if (backend == nullptr) GTEST_SKIP() << "only run as the child job of WatchdogIgnores...";
  MpiSession mpi(nullptr, nullptr);
  CommOptions options;
  options.timeout_seconds = 1;
  auto comm = make_communicator(parse_comm_backend(backend, "child"), MPI_COMM_WORLD, options);
  std::vector<float> mine(8, 1.0f), all(8 * static_cast<std::size_t>(comm->size()));
  CommHandle held = comm->allgather_async(mine.data(), all.data(), mine.size(), DType::fp32);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  comm->barrier();
  held.wait();
  std::printf("held handle outlived comm_timeout on rank %d\n", comm->rank());
}

struct JobResult {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

JobResult run_job(const std::string& command) {
  JobResult result;
  Timer timer;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> chunk{};
  while (fgets(chunk.data(), static_cast<int>(chunk.size()), pipe) != nullptr)
    result.output += chunk.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.seconds = timer.seconds();
  return result;
}

class WatchdogAbortsTheJob : public ::testing::TestWithParam<std::string> {};

TEST_P(WatchdogAbortsTheJob, WhenOneRankSkipsACollectiveWithinSeconds) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const JobResult job =
      run_job("AUTOTRAIN_COMM_WATCHDOG_CHILD=" + GetParam() + " timeout 30 " + AUTOTRAIN_MPIRUN +
              " -np 2 " + self + " --gtest_filter=WatchdogChild.RankOneSkipsAnAllreduce");
  EXPECT_NE(job.exit_code, 0) << job.output;
  EXPECT_NE(job.exit_code, 124) << "the job hung until `timeout` killed it:\n" << job.output;
  EXPECT_LT(job.seconds, 30.0);
  EXPECT_NE(job.output.find("collective timeout: " + GetParam() + " allreduce #1 (4000 bytes"),
            std::string::npos)
      << job.output;
  EXPECT_NE(job.output.find("on rank 0 did not complete within comm_timeout = 2 s"),
            std::string::npos)
      << job.output;
}

INSTANTIATE_TEST_SUITE_P(CpuBackends, WatchdogAbortsTheJob, ::testing::Values("mpi", "gloo"));

class WatchdogIgnoresCompletedCollectives : public ::testing::TestWithParam<std::string> {};

TEST_P(WatchdogIgnoresCompletedCollectives, EvenWhenTheirHandlesAreNotWaitedOn) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const JobResult job = run_job(
      "AUTOTRAIN_COMM_WATCHDOG_HOLD=" + GetParam() + " timeout 30 " + AUTOTRAIN_MPIRUN + " -np 2 " +
      self + " --gtest_filter=WatchdogChild.HoldsACompletedHandlePastTheTimeout");
  EXPECT_EQ(job.exit_code, 0) << job.output;
  EXPECT_EQ(job.output.find("collective timeout"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find("held handle outlived comm_timeout on rank 1"), std::string::npos)
      << job.output;
}

INSTANTIATE_TEST_SUITE_P(CpuBackends, WatchdogIgnoresCompletedCollectives,
                         ::testing::Values("mpi", "gloo"));

}  // namespace
}  // namespace autotrain::comm_test
