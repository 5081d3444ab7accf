#pragma once
// Loss masks beside the token shards, for completion-only loss (train_on_completions_only): the
// mask of <split>_NNNNNN.bin is <split>_NNNNNN.mask in the same folder. llm.c and older autotrain
// shards have none, and every token then carries loss.
//   header: 256 x int32 (little endian): [0] magic 20241202, [1] version 1, [2] token count (the
//           shard's), the rest zero;
//   body:   ceil(count / 8) bytes: bit i % 8 (least significant first) of byte i / 8 is 1 when
//           token i carries loss as a target (an assistant turn's token), 0 when it does not
//           (the prompt, user turns, the tokens between documents).
// A split has a mask for every shard or for none.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace autotrain::data {

constexpr int32_t kMaskMagic = 20241202;
constexpr int32_t kMaskVersion = 1;

// The mask file of a shard: the shard's path with .mask for .bin.
std::filesystem::path mask_path(const std::filesystem::path& shard);

// Writes one mask as tokens come: flags are one byte per token, 0 or 1. The file is valid after
// close() (the destructor closes too but swallows errors).
class MaskWriter {
 public:
  explicit MaskWriter(std::filesystem::path path);
  ~MaskWriter();
  MaskWriter(const MaskWriter&) = delete;
  MaskWriter& operator=(const MaskWriter&) = delete;

  void append(std::span<const uint8_t> flags);
  void close();
  uint64_t tokens() const { return tokens_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  uint8_t pending_ = 0;  // bits of the byte not yet written
  uint64_t tokens_ = 0;
};

// A mask read whole into memory (an eighth of a byte per token). A wrong magic or version, or a
// token count other than `tokens` (its shard's), is an Error naming the file.
class MaskReader {
 public:
  MaskReader(std::filesystem::path path, uint64_t tokens);

  uint64_t size() const { return tokens_; }
  bool carries_loss(uint64_t index) const { return (bits_[index / 8] >> (index % 8)) & 1u; }
  // One byte per token (0 or 1) for tokens [first, first + out.size()).
  void copy(uint64_t first, std::span<uint8_t> out) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  uint64_t tokens_ = 0;
  std::vector<uint8_t> bits_;
};

// Rewrites the mask at `path` keeping its first `tokens` flags (prepare carving a valid split
// off the end of train).
void truncate_mask(const std::filesystem::path& path, uint64_t tokens);

// The conversations of a split prepared with completion-only loss, and how many of them carry
// no loss (no assistant turn): a split where none carries any would train on nothing.
struct LossCounts {
  uint64_t conversations = 0;
  uint64_t without_loss = 0;
  uint64_t loss_tokens = 0;
  void add(int64_t conversation_loss_tokens) {
    ++conversations;
    if (conversation_loss_tokens == 0) ++without_loss;
    loss_tokens += static_cast<uint64_t>(conversation_loss_tokens);
  }
};

// An Error when the split `split` (read from `files`) has conversations but no token that
// carries loss; a warning with the count when some of its conversations carry none.
void check_loss_counts(const LossCounts& counts, const std::string& split,
                       const std::string& files);

}  // namespace autotrain::data
