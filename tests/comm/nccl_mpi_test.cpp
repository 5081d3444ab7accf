// The NCCL bootstrap without a GPU (the unique id over MPI), and NCCL collectives when a GPU is
// present. Builds without NCCL compile none of this.
#ifdef AUTOTRAIN_HAVE_NCCL
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/comm/nccl.hpp"

namespace autotrain {
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

}  // namespace
}  // namespace autotrain
#endif  // AUTOTRAIN_HAVE_NCCL
