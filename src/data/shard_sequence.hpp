#pragma once
// The token shards of one split as prepare writes them: <dir>/<split>_NNNNNN.bin, a new shard
// every `cap` tokens, with a loss mask beside each when masked (data/loss_mask.hpp). Shared by
// prepare (documents, conversations) and the preference pairs (preference.hpp).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/data/loss_mask.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/shard.hpp"

namespace autotrain::data {

// Writes the tokens of one split into <dir>/<split>_NNNNNN.bin, starting a new shard every
// `cap` tokens; `masked`: their loss flags into the .mask beside each.
class ShardSequence {
 public:
  ShardSequence(std::filesystem::path dir, std::string split, uint64_t cap, int32_t version,
                bool masked)
      : dir_(std::move(dir)),
        split_(std::move(split)),
        cap_(cap),
        version_(version),
        masked_(masked) {}

  // flags: one per token (0 or 1), used only when masked.
  void append(std::span<const int32_t> tokens, std::span<const uint8_t> flags = {}) {
    AT_CHECK(!masked_ || flags.size() == tokens.size(), "prepare: ", tokens.size(), " tokens but ",
             flags.size(), " loss flags");
    while (!tokens.empty()) {
      if (!writer_ || writer_->tokens() == cap_) open_next();
      const size_t take = std::min<uint64_t>(tokens.size(), cap_ - writer_->tokens());
      writer_->append(tokens.first(take));
      tokens = tokens.subspan(take);
      if (masked_) {
        mask_->append(flags.first(take));
        flags = flags.subspan(take);
      }
      total_ += take;
    }
  }

  // Tokens that carry no loss (the frame between documents).
  void append_unmasked(std::span<const int32_t> tokens) {
    zeros_.assign(tokens.size(), 0);
    append(tokens, zeros_);
  }

  SplitShards finish() {
    if (!writer_) open_next();  // an empty split still gets one (empty) shard
    writer_->close();
    if (mask_) mask_->close();
    return {split_, paths_, total_};
  }

 private:
  void open_next() {
    if (writer_) writer_->close();
    if (mask_) mask_->close();
    paths_.push_back(shard_path(dir_, split_, paths_.size()));
    writer_ = std::make_unique<ShardWriter>(paths_.back(), version_);
    if (masked_) mask_ = std::make_unique<MaskWriter>(mask_path(paths_.back()));
  }

  std::filesystem::path dir_;
  std::string split_;
  uint64_t cap_;
  int32_t version_;
  bool masked_;
  std::unique_ptr<ShardWriter> writer_;
  std::unique_ptr<MaskWriter> mask_;
  std::vector<uint8_t> zeros_;
  std::vector<std::filesystem::path> paths_;
  uint64_t total_ = 0;
};

// Moves the last `count` tokens of `train` into a new split `valid_split` (one or more
// shards), truncating or removing train shards; their loss masks likewise, when `masked`.
SplitShards carve_tail(SplitShards& train, const std::string& valid_split, uint64_t count,
                       const std::filesystem::path& dir, uint64_t cap, int32_t version,
                       bool masked);

// Removes <dir>/<split>_NNNNNN.bin and .mask (an earlier preparation of the split).
void remove_old_shards(const std::filesystem::path& dir, const std::string& split);

}  // namespace autotrain::data
