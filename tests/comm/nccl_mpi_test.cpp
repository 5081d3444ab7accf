// The NCCL bootstrap without a GPU (the unique id over MPI), and NCCL collectives when a GPU is
// present. Builds without NCCL compile none of this.
#ifdef AUTOTRAIN_HAVE_NCCL
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/comm/nccl.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::nccl_mpi_test {
namespace {

TEST(NcclBootstrap, EveryRankReceivesRankZerosUniqueIdBytes) {
  const ncclUniqueId id = broadcast_nccl_unique_id(MPI_COMM_WORLD);
  static_assert(sizeof id == NCCL_UNIQUE_ID_BYTES && NCCL_UNIQUE_ID_BYTES == 128);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(sizeof id * static_cast<size_t>(size));
  MPI_Allgather(&id, sizeof id, MPI_BYTE, all.data(), sizeof id, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r) {
    EXPECT_EQ(std::memcmp(all.data(), all.data() + r * sizeof id, sizeof id), 0)
        << "rank " << r << " got different id bytes than rank 0";
  }
  const ncclUniqueId zero{};
  EXPECT_NE(std::memcmp(&id, &zero, sizeof id), 0) << "the id is all zero bytes";
}

// Real GPU only: NCCL itself (the emulator's NCCL runs over MPI).
TEST(NcclCollectives, AllreduceSumsDeviceBuffersAcrossRanks) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    GTEST_SKIP() << "no CUDA device: NCCL collectives not tested";
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > devices)
    GTEST_SKIP() << size << " ranks but " << devices << " CUDA devices: NCCL needs one per rank";
  CommOptions options;
  options.device = rank;
  options.timeout_seconds = 60;
  auto comm = make_communicator(CommBackend::nccl, MPI_COMM_WORLD, options);
  constexpr size_t kCount = 1000;
  std::vector<float> host(kCount, static_cast<float>(rank + 1));
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kCount * sizeof(float)), cudaSuccess);
  cudaMemcpy(device, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice);
  comm->allreduce(device, kCount, DType::fp32, ReduceOp::sum);
  cudaMemcpy(host.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(device);
  EXPECT_EQ(host[kCount - 1], static_cast<float>(size * (size + 1) / 2));
}

// NCCL init failures, injected by the CUDA emulator (AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL names the
// ranks whose ncclCommInitRankConfig fails at once; the others' NCCL waits for them).
class NcclInitFailure : public testing::Test {
 protected:
  void SetUp() override {
#ifndef AUTOTRAIN_CUDA_EMULATED
    GTEST_SKIP() << "init failures are injected by the CUDA emulator only";
#endif
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // The emulator has devices only where the GPU tests ask for them (AUTOTRAIN_CUDA_EMU_DEVICES).
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < size_) {
      cudaGetLastError();
      GTEST_SKIP() << size_ << " ranks but " << devices << " CUDA devices: one per rank needed";
    }
  }
  void TearDown() override {
    unsetenv("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL");
  }

  static void fail_init_on(const std::string& ranks) {
    setenv("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL", ranks.c_str(), 1);
  }
  // Creates an NCCL communicator on this rank's device with comm_timeout = 60 s.
  std::unique_ptr<Communicator> create() const {
    CommOptions options;
    options.device = rank_;
    options.timeout_seconds = 60;
    return make_communicator(CommBackend::nccl, MPI_COMM_WORLD, options);
  }
  // The error the creation throws on this rank (empty if none) and the seconds it took.
  std::pair<std::string, double> failed_creation() const {
    const auto start = std::chrono::steady_clock::now();
    std::string message;
    try {
      create();
    } catch (const CollectiveError& error) {
      message = error.what();
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return {message, took.count()};
  }

  int rank_ = 0;
  int size_ = 1;
};

TEST_F(NcclInitFailure, ARankWhoseInitFailsEndsEveryRanksCreationWithinSeconds) {
  const int failing = size_ - 1;
  fail_init_on(std::to_string(failing));
  const auto [message, seconds] = failed_creation();
  ASSERT_FALSE(message.empty()) << "creation did not throw a CollectiveError";
  EXPECT_NE(message.find("failed on rank " + std::to_string(failing)), std::string::npos)
      << message;
  EXPECT_NE(message.find("unhandled system error"), std::string::npos) << message;
  EXPECT_NE(message.find("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL"), std::string::npos) << message;
  // Not comm_timeout (60 s): the failing rank's note stops the others at once.
  EXPECT_LT(seconds, 10.0) << message;
}

TEST_F(NcclInitFailure, TwoFailingRanksEndEveryRanksCreationNamingTheLowest) {
  const int lowest = std::max(size_ - 2, 0);  // one rank fails at np=1
  fail_init_on(std::to_string(lowest) + "," + std::to_string(size_ - 1));
  const auto [message, seconds] = failed_creation();
  ASSERT_FALSE(message.empty()) << "creation did not throw a CollectiveError";
  EXPECT_NE(message.find("failed on rank " + std::to_string(lowest)), std::string::npos) << message;
  EXPECT_LT(seconds, 10.0) << message;
}

TEST_F(NcclInitFailure, LeavesNothingInFlightForTheNextCommunicator) {
  fail_init_on(std::to_string(size_ - 1));
  ASSERT_FALSE(failed_creation().first.empty());
  unsetenv("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL");
  auto comm = create();
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, sizeof(float)), cudaSuccess);
  const float mine = static_cast<float>(rank_ + 1);
  cudaMemcpy(device, &mine, sizeof mine, cudaMemcpyHostToDevice);
  comm->allreduce(device, 1, DType::fp32, ReduceOp::sum);
  float sum = 0;
  cudaMemcpy(&sum, device, sizeof sum, cudaMemcpyDeviceToHost);
  cudaFree(device);
  EXPECT_EQ(sum, static_cast<float>(size_ * (size_ + 1) / 2));
}

}  // namespace
}  // namespace autotrain::nccl_mpi_test
#endif  // AUTOTRAIN_HAVE_NCCL
