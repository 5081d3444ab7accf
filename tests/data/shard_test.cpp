#include "autotrain/data/shard.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::data::shard_test {
namespace {

std::string error_of(const std::filesystem::path& path) {
  try {
    ShardReader reader(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

void overwrite_int32(const std::filesystem::path& path, size_t index, int32_t value) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekp(static_cast<std::streamoff>(index * sizeof(int32_t)));
  file.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

TEST(Shard, WriteThenReadRoundTripsTokensInLlmcLayout) {
  testing::TempDir dir;
  std::vector<uint16_t> tokens(1000);
  std::iota(tokens.begin(), tokens.end(), 50000);
  const auto path = shard_path(dir.path(), "train", 0);
  EXPECT_EQ(path.filename(), "train_000000.bin");
  write_shard(path, tokens);
  EXPECT_EQ(std::filesystem::file_size(path), 1024 + 2 * tokens.size());

  const std::string bytes = testing::read_file(path);
  int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof(header));
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 1000);

  const ShardReader reader(path);
  ASSERT_EQ(reader.size(), tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(reader.token(i), tokens[i]) << i;
}

TEST(Shard, RefusesATruncatedShardNamingFileAndSizes) {
  testing::TempDir dir;
  const auto path = dir / "train_000000.bin";
  write_shard(path, std::vector<uint16_t>(100, 7));
  std::filesystem::resize_file(path, 1024 + 150);
  const std::string message = error_of(path);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("100 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("autotrain prepare"), std::string::npos) << message;
}

TEST(Shard, RefusesAFileShorterThanTheHeader) {
  testing::TempDir dir;
  testing::write_file(dir / "x.bin", "short");
  EXPECT_NE(error_of(dir / "x.bin").find("shorter than the 1024-byte header"), std::string::npos);
}

TEST(Shard, RefusesAWrongMagic) {
  testing::TempDir dir;
  const auto path = dir / "train_000000.bin";
  write_shard(path, std::vector<uint16_t>(10, 1));
  overwrite_int32(path, 0, 12345);
  const std::string message = error_of(path);
  EXPECT_NE(message.find("magic 12345, expected 20240520"), std::string::npos) << message;
}

TEST(Shard, RefusesAnUnknownVersion) {
  testing::TempDir dir;
  const auto path = dir / "train_000000.bin";
  write_shard(path, std::vector<uint16_t>(10, 1));
  overwrite_int32(path, 1, 3);
  EXPECT_NE(error_of(path).find("format version 3"), std::string::npos);
}

TEST(Shard, Version2HoldsIdsOfLargeVocabulariesAsUint32) {
  testing::TempDir dir;
  const std::vector<uint32_t> tokens = {0, 65535, 65536, 128255, 151668};
  const auto path = shard_path(dir.path(), "train", 0);
  write_shard(path, tokens);
  EXPECT_EQ(std::filesystem::file_size(path), 1024 + 4 * tokens.size());
  const ShardReader reader(path);
  EXPECT_EQ(reader.version(), 2);
  std::vector<int32_t> read(tokens.size());
  reader.copy(0, read);
  EXPECT_EQ(read, std::vector<int32_t>(tokens.begin(), tokens.end()));
  EXPECT_EQ(shard_version_for(65536), 1);
  EXPECT_EQ(shard_version_for(65537), 2);
}

TEST(Shard, Version1RefusesAnIdItCannotHold) {
  testing::TempDir dir;
  ShardWriter writer(dir / "train_000000.bin", kShardVersion16);
  const std::vector<int32_t> ids = {1, 70000};
  try {
    writer.append(ids);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("70000"), std::string::npos) << error.what();
  }
}

TEST(TokenDataset, NamesTheFirstIdOutsideTheModelsVocabulary) {
  testing::TempDir dir;
  write_shard(shard_path(dir.path(), "train", 0), std::vector<uint32_t>{5, 6, 7});
  write_shard(shard_path(dir.path(), "train", 1), std::vector<uint32_t>{8, 130000, 9, 140000});
  const TokenDataset dataset = TokenDataset::open(dir.path(), "train");
  EXPECT_NO_THROW(dataset.check_ids_below(140001));
  try {
    dataset.check_ids_below(128256);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("train_000001.bin holds token id 130000 at position 1"),
              std::string::npos)
        << message;
  }
}

TEST(Shard, ListsShardsInIndexOrderAndReportsAGap) {
  testing::TempDir dir;
  for (size_t i : {0, 1, 2})
    write_shard(shard_path(dir.path(), "valid", i), std::vector<uint16_t>(3, 1));
  write_shard(shard_path(dir.path(), "train", 0), std::vector<uint16_t>(3, 1));
  const auto shards = list_shards(dir.path(), "valid");
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[2].filename(), "valid_000002.bin");
  EXPECT_EQ(TokenDataset(shards).num_tokens(), 9u);

  std::filesystem::remove(shard_path(dir.path(), "valid", 1));
  EXPECT_THROW(list_shards(dir.path(), "valid"), Error);

  std::filesystem::remove(shard_path(dir.path(), "valid", 0));  // llm.c numbers from 1 too
  EXPECT_EQ(list_shards(dir.path(), "valid").size(), 1u);
}

TEST(Shard, DatasetWithoutShardsSaysHowToCreateThem) {
  testing::TempDir dir;
  try {
    TokenDataset::open(dir.path(), "train");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("autotrain prepare"), std::string::npos);
  }
}

}  // namespace
}  // namespace autotrain::data::shard_test
