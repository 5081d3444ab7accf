// TensorBoard's record framing (tests/e2e/tensorboard_check.py reads whole files with protobuf's
// own parser): CRC-32C's check value and the records' layout.
#include "autotrain/train/tensorboard.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "test_support.hpp"

namespace autotrain::train::tensorboard_test {
namespace {

TEST(TensorBoard, Crc32cIsCastagnolis) {
  const char* check = "123456789";  // the catalogue's check input
  EXPECT_EQ(crc32c(reinterpret_cast<const unsigned char*>(check), 9), 0xe3069283u);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
}

TEST(TensorBoard, WritesFramedRecordsInANewFilePerRun) {
  testing::TempDir dir;
  std::filesystem::path first;
  {
    TensorBoardLog log(dir.path() / "runs");
    first = log.path();
    StepMetrics metrics;
    metrics.step = 3;
    metrics.loss = 2.5;
    metrics.lr = 1e-3;
    log.write(metrics);
  }
  std::ifstream in(first, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Two records: 8 length bytes, 4 CRC bytes, the payload, 4 CRC bytes each.
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  std::uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + 8, 4);
  EXPECT_EQ(stored, masked_crc32c(reinterpret_cast<const unsigned char*>(bytes.data()), 8));
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
  const std::size_t second = 16 + length;
  ASSERT_LT(second, bytes.size());
  std::memcpy(&length, bytes.data() + second, 8);
  EXPECT_EQ(second + 16 + length, bytes.size());
  EXPECT_NE(bytes.find("train/loss"), std::string::npos);
  // A resumed run: a file of its own beside the first.
  TensorBoardLog again(dir.path() / "runs");
  EXPECT_NE(again.path(), first);
}

}  // namespace
}  // namespace autotrain::train::tensorboard_test
