#pragma once
// Token shards in llm.c's format, so shards from either tool work in the other:
//   header: 256 x int32 (little endian): [0] magic 20240520, [1] version 1, [2] token count,
//           the rest zero;
//   body:   token count x uint16 token ids.
// A dataset split is the list of its shards, <dir>/<split>_000000.bin, <split>_000001.bin, ...
// concatenated logically.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace autotrain::data {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr size_t kShardHeaderInts = 256;
constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// "<dir>/<split>_<index, 6 digits>.bin"
std::filesystem::path shard_path(const std::filesystem::path& dir, const std::string& split,
                                 size_t index);
// The shards of `split` in `dir`, in index order. Numbering may start at any index (llm.c's
// fineweb_train_000001.bin); a gap is an Error (a shard went missing).
std::vector<std::filesystem::path> list_shards(const std::filesystem::path& dir,
                                               const std::string& split);

// Writes one shard: a provisional header, the tokens as they come, and the real token count in
// the header on close(). The file is only valid after close() (the destructor closes too but
// swallows errors; call close() to see them).
class ShardWriter {
 public:
  explicit ShardWriter(std::filesystem::path path);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void append(std::span<const uint16_t> tokens);
  void close();
  uint64_t tokens() const { return tokens_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  uint64_t tokens_ = 0;
};

// Writes a whole shard at once (tests, small tools).
void write_shard(const std::filesystem::path& path, std::span<const uint16_t> tokens);

// A read-only memory map of one shard, header checked on open: a wrong magic, an unknown
// version or a size that does not match the token count is an Error naming the file, what is
// wrong and what to do.
class ShardReader {
 public:
  explicit ShardReader(std::filesystem::path path);
  ~ShardReader();
  ShardReader(ShardReader&& other) noexcept;
  ShardReader& operator=(ShardReader&& other) noexcept;
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  std::span<const uint16_t> tokens() const { return tokens_; }
  uint64_t size() const { return tokens_.size(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  void unmap();

  std::filesystem::path path_;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::span<const uint16_t> tokens_;
};

// The shards of one split read as one token sequence.
class TokenDataset {
 public:
  explicit TokenDataset(const std::vector<std::filesystem::path>& shard_paths);
  // All shards of `split` in `dir`; an Error if there are none.
  static TokenDataset open(const std::filesystem::path& dir, const std::string& split);

  uint64_t num_tokens() const { return offsets_.back(); }
  const std::vector<ShardReader>& shards() const { return shards_; }
  // out[i] = token[start + i]; the range may cross shard boundaries. Throws Error when it
  // runs past the end. Allocates nothing.
  void copy(uint64_t start, std::span<int32_t> out) const;

 private:
  std::vector<ShardReader> shards_;
  std::vector<uint64_t> offsets_;  // offsets_[i] = first global token of shard i; back() = total
};

}  // namespace autotrain::data
