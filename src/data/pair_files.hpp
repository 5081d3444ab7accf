#pragma once
// The files of one split of preference pairs (layout in data/preference.hpp): the token shards,
// written through a ShardSequence, and the pair index written when the split is complete.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "autotrain/data/preference.hpp"
#include "shard_sequence.hpp"

namespace autotrain::data {

constexpr uint64_t kPairIndexMagic = 0x3153524941505441ull;  // "ATPAIRS1", little endian
constexpr uint64_t kPairIndexVersion = 1;
constexpr size_t kPairIndexHeaderWords = 8;  // [magic, version, pairs, tokens, eos, pad, reward, 0]

// "<split>_pairs": the shard names' prefix, <split>_pairs_NNNNNN.bin.
std::string pair_shard_prefix(const std::string& split);
std::filesystem::path pair_index_path(const std::filesystem::path& dir, const std::string& split);
// The index's size in bytes for `pairs` pairs.
uint64_t pair_index_bytes(uint64_t pairs);

// What the index header records besides the counts.
struct PairIndexInfo {
  TokenId eos = 0, pad = 0;
  bool reward = false;
};

// A split's pairs as written: its shards, the 3 x pairs + 1 token offsets, and what truncation
// cut of each pair (bit 0: the prompt; bits 1-2: how many completions).
struct WrittenPairs {
  SplitShards shards;
  std::vector<uint64_t> offsets{0};
  std::vector<uint8_t> cuts;
  uint64_t pairs() const { return cuts.size(); }
  // `split` with its files and counts (pairs, prompts and completions truncated).
  PairSplit describe(std::string split, std::filesystem::path index) const;
};

class PairWriter {
 public:
  PairWriter(const std::filesystem::path& dir, const std::string& split, uint64_t cap,
             int32_t version);
  void append(const PairTokens& pair);
  WrittenPairs finish();

 private:
  ShardSequence tokens_;
  WrittenPairs written_;
};

// Moves the last `count` pairs of `train` into the split `valid_split` (valid_fraction without
// a valid file), as carve_tail moves tokens.
WrittenPairs carve_pairs(WrittenPairs& train, const std::string& valid_split, uint64_t count,
                         const std::filesystem::path& dir, uint64_t cap, int32_t version);

void write_pair_index(const std::filesystem::path& path, const WrittenPairs& pairs,
                      const PairIndexInfo& info);

// Removes an earlier preparation's files of `split` (shards and index).
void remove_old_pair_files(const std::filesystem::path& dir, const std::string& split);

}  // namespace autotrain::data
