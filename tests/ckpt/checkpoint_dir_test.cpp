// The checkpoint folder's small files (latest, commits) are replaced atomically, and a write that
// fails says why.
#include "autotrain/ckpt/checkpoint_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::ckpt::checkpoint_dir_test {
namespace {
namespace fs = std::filesystem;

TEST(CheckpointDirFiles, SetLatestNamesTheCheckpoint) {
  testing::TempDir dir;
  std::ofstream(dir / "checkpoint-4.h5") << "x";
  const CheckpointDir checkpoints(dir.path());
  checkpoints.set_latest(dir / "checkpoint-4.h5");
  ASSERT_TRUE(checkpoints.latest());
  EXPECT_EQ(checkpoints.latest()->filename(), "checkpoint-4.h5");
  EXPECT_FALSE(fs::exists(dir / "latest.tmp"));
}

TEST(CheckpointDirFiles, AFailedWriteOfLatestNamesTheFileAndTheReason) {
  testing::TempDir dir;
  fs::create_directory(dir / "latest.tmp");  // cannot be opened as a file: EISDIR
  const CheckpointDir checkpoints(dir.path());
  try {
    checkpoints.set_latest(dir / "checkpoint-4.h5");
    FAIL() << "writing latest.tmp over a folder succeeded";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find((dir / "latest.tmp").string()), std::string::npos) << message;
    EXPECT_NE(message.find("Is a directory"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace autotrain::ckpt::checkpoint_dir_test
