#include "shard_sequence.hpp"

#include <algorithm>
#include <fstream>
#include <optional>

#include "autotrain/core/error.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kCopyTokens = 1 << 20;  // tokens moved at a time when carving a tail

}  // namespace

SplitShards carve_tail(SplitShards& train, const std::string& valid_split, uint64_t count,
                       const fs::path& dir, uint64_t cap, int32_t version, bool masked) {
  ShardSequence valid(dir, valid_split, cap, version, masked);
  std::vector<int32_t> chunk;
  std::vector<uint8_t> flags;
  const uint64_t keep = train.tokens - count;
  uint64_t offset = 0;  // global index of the current shard's first token
  std::vector<std::pair<fs::path, uint64_t>> truncate;  // shards to shrink to n tokens
  for (const auto& path : train.shards) {
    const ShardReader reader(path);
    const uint64_t end = offset + reader.size();
    if (end > keep) {
      const uint64_t local = keep > offset ? keep - offset : 0;
      const std::optional<MaskReader> mask =
          masked ? std::optional<MaskReader>(std::in_place, mask_path(path), reader.size())
                 : std::nullopt;
      for (uint64_t first = local; first < reader.size(); first += kCopyTokens) {
        chunk.resize(std::min<uint64_t>(kCopyTokens, reader.size() - first));
        reader.copy(first, chunk);
        flags.resize(masked ? chunk.size() : 0);
        if (mask) mask->copy(first, flags);
        valid.append(chunk, flags);
      }
      truncate.emplace_back(path, local);
    }
    offset = end;
  }
  for (const auto& [path, tokens] : truncate) {
    if (tokens == 0 && path != train.shards.front()) {
      fs::remove(path);
      fs::remove(mask_path(path));
      train.shards.erase(std::find(train.shards.begin(), train.shards.end(), path));
      continue;
    }
    // Rewrite the header count and cut the file (llm.c format: header, then the tokens).
    fs::resize_file(path, kShardHeaderBytes + tokens * shard_token_bytes(version));
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto count32 = static_cast<int32_t>(tokens);
    file.seekp(2 * sizeof(int32_t));
    file.write(reinterpret_cast<const char*>(&count32), sizeof(count32));
    AT_CHECK(file, "cannot rewrite the header of ", path.string());
    if (masked) truncate_mask(mask_path(path), tokens);
  }
  train.tokens = keep;
  return valid.finish();
}

void remove_old_shards(const fs::path& dir, const std::string& split) {
  if (split.empty() || !fs::is_directory(dir)) return;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool shard = name.size() == split.size() + 11 && name.ends_with(".bin");
    const bool mask = name.size() == split.size() + 12 && name.ends_with(".mask");
    if ((shard || mask) && name.starts_with(split + "_")) fs::remove(entry.path());
  }
}

}  // namespace autotrain::data
