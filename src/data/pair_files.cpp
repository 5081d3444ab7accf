#include "pair_files.hpp"

#include <array>
#include <fstream>

#include "autotrain/core/error.hpp"

namespace autotrain::data {

namespace fs = std::filesystem;

std::string pair_shard_prefix(const std::string& split) {
  return split + "_pairs";
}

fs::path pair_index_path(const fs::path& dir, const std::string& split) {
  return dir / (split + "_pairs.idx");
}

uint64_t pair_index_bytes(uint64_t pairs) {
  return (kPairIndexHeaderWords + 3 * pairs + 1) * sizeof(uint64_t);
}

PairWriter::PairWriter(const fs::path& dir, const std::string& split, uint64_t cap, int32_t version)
    : tokens_(dir, pair_shard_prefix(split), cap, version, false) {}

void PairWriter::append(const PairTokens& pair) {
  for (const auto* part : {&pair.prompt, &pair.chosen, &pair.rejected}) {
    tokens_.append(*part);
    written_.offsets.push_back(written_.offsets.back() + part->size());
  }
  written_.cuts.push_back(
      static_cast<uint8_t>((pair.prompt_truncated ? 1 : 0) | pair.completions_truncated << 1));
}

WrittenPairs PairWriter::finish() {
  written_.shards = tokens_.finish();
  return std::move(written_);
}

PairSplit WrittenPairs::describe(std::string split, fs::path index) const {
  PairSplit out;
  out.split = std::move(split);
  out.files = shards.shards;
  out.index = std::move(index);
  out.pairs = pairs();
  for (const uint8_t cut : cuts) {
    out.prompts_truncated += cut & 1u;
    out.completions_truncated += cut >> 1;
  }
  return out;
}

WrittenPairs carve_pairs(WrittenPairs& train, const std::string& valid_split, uint64_t count,
                         const fs::path& dir, uint64_t cap, int32_t version) {
  const uint64_t keep = train.pairs() - count;
  const uint64_t first_token = train.offsets[3 * keep];
  WrittenPairs valid;
  valid.shards = carve_tail(train.shards, pair_shard_prefix(valid_split),
                            train.shards.tokens - first_token, dir, cap, version, false);
  valid.offsets.clear();
  for (size_t i = 3 * keep; i < train.offsets.size(); ++i)
    valid.offsets.push_back(train.offsets[i] - first_token);
  valid.cuts.assign(train.cuts.begin() + static_cast<std::ptrdiff_t>(keep), train.cuts.end());
  train.offsets.resize(3 * keep + 1);
  train.cuts.resize(keep);
  return valid;
}

void write_pair_index(const fs::path& path, const WrittenPairs& pairs, const PairIndexInfo& info) {
  const std::array<uint64_t, kPairIndexHeaderWords> header{kPairIndexMagic,
                                                           kPairIndexVersion,
                                                           pairs.pairs(),
                                                           pairs.offsets.back(),
                                                           static_cast<uint64_t>(info.eos),
                                                           static_cast<uint64_t>(info.pad),
                                                           info.reward ? 1u : 0u,
                                                           0};
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  AT_CHECK(out, "cannot create pair index ", path.string());
  out.write(reinterpret_cast<const char*>(header.data()), sizeof(header));
  out.write(reinterpret_cast<const char*>(pairs.offsets.data()),
            static_cast<std::streamsize>(pairs.offsets.size() * sizeof(uint64_t)));
  out.close();
  AT_CHECK(out, "cannot write pair index ", path.string(), " (disk full?)");
}

void remove_old_pair_files(const fs::path& dir, const std::string& split) {
  if (split.empty()) return;
  remove_old_shards(dir, pair_shard_prefix(split));
  fs::remove(pair_index_path(dir, split));
}

}  // namespace autotrain::data
