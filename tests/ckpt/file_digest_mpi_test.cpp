// The digest of weight files: every byte counts, and the ranks that read it do not change it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>
#include <vector>

#include "autotrain/ckpt/file_digest.hpp"
#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::ckpt::file_digest_mpi_test {
namespace {

namespace fs = std::filesystem;

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Rank 0 writes `bytes` pseudo-random bytes (seeded) to `path`; every rank waits for it.
void write_bytes(const fs::path& path, size_t bytes, unsigned seed) {
  if (world_rank() == 0) {
    std::string text(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i)
      text[i] = static_cast<char>((i * 2654435761u + seed * 0x9E3779B9u) >> 7);
    testing::write_file(path, text);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Rank 0 flips one byte of `path` in place; every rank waits for it.
void flip_byte(const fs::path& path, size_t at) {
  if (world_rank() == 0) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(at));
    const char old = static_cast<char>(file.get());
    file.seekp(static_cast<std::streamoff>(at));
    file.put(static_cast<char>(old ^ 0x5a));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(FileDigest, IsTheSameOnAnyNumberOfRanksAndAnyBlockSize) {
  testing::SharedTempDir dir;
  // Sizes that end mid-word and mid-block, so the padding and the last blocks are exercised.
  const std::vector<fs::path> files = {dir / "a.safetensors", dir / "b.safetensors"};
  write_bytes(files[0], 10'003, 1);
  write_bytes(files[1], 4'101, 2);
  const uint64_t alone = files_digest(files, MPI_COMM_SELF, 1024);
  EXPECT_EQ(files_digest(files, MPI_COMM_WORLD, 1024), alone);
  EXPECT_EQ(files_digest(files, MPI_COMM_WORLD, 64), alone);
  EXPECT_EQ(files_digest(files, MPI_COMM_WORLD), alone);
}

TEST(FileDigest, SeesOneChangedByteInTheMiddle) {
  testing::SharedTempDir dir;
  const std::vector<fs::path> files = {dir / "model.safetensors"};
  write_bytes(files[0], 100'000, 3);
  const uint64_t before = files_digest(files, MPI_COMM_WORLD, 4096);
  flip_byte(files[0], 50'001);
  EXPECT_NE(files_digest(files, MPI_COMM_WORLD, 4096), before);
}

TEST(FileDigest, SeesBytesMovedBetweenFiles) {
  testing::SharedTempDir dir;
  write_bytes(dir / "a", 16, 4);
  write_bytes(dir / "b", 16, 5);
  const std::vector<fs::path> ab = {dir / "a", dir / "b"};
  const std::vector<fs::path> ba = {dir / "b", dir / "a"};
  EXPECT_NE(files_digest(ab, MPI_COMM_WORLD), files_digest(ba, MPI_COMM_WORLD));
}

TEST(FileDigest, AMissingFileFailsEveryRankNamingIt) {
  testing::SharedTempDir dir;
  const std::vector<fs::path> files = {dir / "missing.safetensors"};
  try {
    files_digest(files, MPI_COMM_WORLD);
    ADD_FAILURE() << "a missing file was digested";
  } catch (const CollectiveError& error) {
    EXPECT_NE(std::string(error.what()).find("missing.safetensors"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace autotrain::ckpt::file_digest_mpi_test
