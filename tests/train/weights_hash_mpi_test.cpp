// The base weights' hash that a fine-tuning resume compares: every byte of the files counts, and
// the number of ranks that read them does not.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>

#include "autotrain/train/pretrained.hpp"
#include "test_support.hpp"

namespace autotrain::train::weights_hash_mpi_test {
namespace {

namespace fs = std::filesystem;

bool is_rank_zero() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

// A model.safetensors stand-in of `bytes` bytes (the hash does not parse it).
void write_weights(const fs::path& folder, size_t bytes) {
  if (is_rank_zero()) {
    std::string text(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>(i * 131 + i / 4096);
    testing::write_file(folder / "model.safetensors", text);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(WeightsHash, AChangedMiddleByteIsSeenWhereTheSampledHashMissesIt) {
  testing::SharedTempDir dir;
  const size_t bytes = size_t{3} << 20;  // the middle MiB is outside the old samples
  write_weights(dir.path(), bytes);
  const std::string before = weights_hash(dir.path(), MPI_COMM_WORLD);
  EXPECT_EQ(before.rfind(kWeightsHashPrefix, 0), 0u) << before;
  const std::string sampled = sampled_weights_hash(dir.path());
  if (is_rank_zero()) {
    std::fstream file(dir / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(bytes / 2));
    file.put('\x7f');
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_NE(weights_hash(dir.path(), MPI_COMM_WORLD), before);
  EXPECT_EQ(sampled_weights_hash(dir.path()), sampled);  // why the full read is needed
}

TEST(WeightsHash, IsTheSameOnOneRankAsOnAll) {
  testing::SharedTempDir dir;
  write_weights(dir.path(), (size_t{1} << 20) + 5);
  EXPECT_EQ(weights_hash(dir.path(), MPI_COMM_WORLD), weights_hash(dir.path(), MPI_COMM_SELF));
}

}  // namespace
}  // namespace autotrain::train::weights_hash_mpi_test
