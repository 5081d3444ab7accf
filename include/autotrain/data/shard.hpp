#pragma once
// Token shards in llm.c's format, so shards from either tool work in the other:
//   header: 256 x int32 (little endian): [0] magic 20240520, [1] version, [2] token count,
//           the rest zero;
//   body:   token count x token ids: uint16 in version 1, uint32 in version 2 (vocabularies
//           of more than 65,536 tokens: Llama 3, Qwen).
// A dataset split is the list of its shards, <dir>/<split>_000000.bin, <split>_000001.bin, ...
// concatenated logically.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "autotrain/data/loss_mask.hpp"
#include "autotrain/data/mapped_file.hpp"

namespace autotrain::data {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion16 = 1;  // uint16 ids
constexpr int32_t kShardVersion32 = 2;  // uint32 ids
constexpr size_t kShardHeaderInts = 256;
constexpr size_t kShardHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// The version that holds ids of a vocabulary of `vocab_size` tokens.
int32_t shard_version_for(int64_t vocab_size);
size_t shard_token_bytes(int32_t version);

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
  explicit ShardWriter(std::filesystem::path path, int32_t version = kShardVersion16);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // An id the version cannot hold (negative, or >= 65536 in version 1) is an Error.
  void append(std::span<const int32_t> tokens);
  void close();
  uint64_t tokens() const { return tokens_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  int32_t version_;
  std::vector<uint16_t> narrow_;  // version 1 conversion buffer
  uint64_t tokens_ = 0;
};

// Writes a whole shard at once (tests, small tools): version 1 from uint16 ids, version 2
// from uint32 ids.
void write_shard(const std::filesystem::path& path, std::span<const uint16_t> tokens);
void write_shard(const std::filesystem::path& path, std::span<const uint32_t> tokens);

// A read-only memory map of one shard, header checked on open: a wrong magic, an unknown
// version or a size that does not match the token count is an Error naming the file, what is
// wrong and what to do.
class ShardReader {
 public:
  explicit ShardReader(std::filesystem::path path);

  uint64_t size() const { return count_; }
  int32_t version() const { return version_; }
  int32_t token(uint64_t index) const {
    return version_ == kShardVersion16
               ? reinterpret_cast<const uint16_t*>(body_)[index]
               : static_cast<int32_t>(reinterpret_cast<const uint32_t*>(body_)[index]);
  }
  // out[i] = token(first + i); the range must lie inside the shard.
  void copy(uint64_t first, std::span<int32_t> out) const;
  const std::filesystem::path& path() const { return file_.path(); }

 private:
  MappedFile file_;
  const std::byte* body_ = nullptr;  // inside file_'s mapping, which a move keeps in place
  uint64_t count_ = 0;
  int32_t version_ = kShardVersion16;
};

// The shards of one split read as one token sequence, with their loss masks when the split has
// them (data/loss_mask.hpp).
class TokenDataset {
 public:
  explicit TokenDataset(const std::vector<std::filesystem::path>& shard_paths);
  // All shards of `split` in `dir`; an Error if there are none.
  static TokenDataset open(const std::filesystem::path& dir, const std::string& split);

  uint64_t num_tokens() const { return offsets_.back(); }
  const std::vector<ShardReader>& shards() const { return shards_; }
  // Whether the shards have loss masks (all of them: some without is an Error on opening).
  bool has_loss_mask() const { return !masks_.empty(); }
  // Sets targets[i] to kIgnoreTarget where token start + i carries no loss (nothing without
  // masks). Allocates nothing.
  void mask_targets(uint64_t start, std::span<int32_t> targets) const;
  // How many of tokens [start, start + count) carry loss (count without masks).
  uint64_t loss_tokens(uint64_t start, uint64_t count) const;
  // out[i] = token[start + i]; the range may cross shard boundaries. Throws Error when it
  // runs past the end. Allocates nothing.
  void copy(uint64_t start, std::span<int32_t> out) const;
  // An Error naming the shard, position and id of the first id >= vocab_size (the shards were
  // prepared with another tokenizer than the model's).
  void check_ids_below(int64_t vocab_size) const;

 private:
  // The shard holding global token `index` (the last offset <= index).
  size_t shard_of(uint64_t index) const;

  std::vector<ShardReader> shards_;
  std::vector<MaskReader> masks_;  // one per shard, or none
  std::vector<uint64_t> offsets_;  // offsets_[i] = first global token of shard i; back() = total
};

}  // namespace autotrain::data
