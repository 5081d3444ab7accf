#include "autotrain/data/shard.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <regex>
#include <set>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"

namespace autotrain::data {
namespace {

static_assert(std::endian::native == std::endian::little,
              "shards are little endian (llm.c's format); big-endian hosts need byte swapping");

constexpr const char* kRemedy = "; re-create it with `autotrain prepare` (docs/data.md)";

}  // namespace

int32_t shard_version_for(int64_t vocab_size) {
  return vocab_size > 65536 ? kShardVersion32 : kShardVersion16;
}

size_t shard_token_bytes(int32_t version) {
  return version == kShardVersion16 ? sizeof(uint16_t) : sizeof(uint32_t);
}

std::filesystem::path shard_path(const std::filesystem::path& dir, const std::string& split,
                                 size_t index) {
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "_%06zu.bin", index);
  return dir / (split + suffix);
}

std::vector<std::filesystem::path> list_shards(const std::filesystem::path& dir,
                                               const std::string& split) {
  std::set<size_t> indices;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) return {};
  const std::regex pattern(R"(_(\d{6,})\.bin)");
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (!name.starts_with(split)) continue;
    const std::string rest = name.substr(split.size());
    if (std::regex_match(rest, match, pattern)) indices.insert(std::stoull(match[1].str()));
  }
  std::vector<std::filesystem::path> paths;
  // Numbering may start anywhere (llm.c's fineweb train shards start at 1) but has no gaps.
  size_t expected = indices.empty() ? 0 : *indices.begin();
  for (const size_t index : indices) {
    AT_CHECK(index == expected, "shard ", shard_path(dir, split, expected).string(),
             " is missing but ", shard_path(dir, split, index).string(), " exists", kRemedy);
    paths.push_back(shard_path(dir, split, index));
    ++expected;
  }
  return paths;
}

ShardWriter::ShardWriter(std::filesystem::path path, int32_t version)
    : path_(std::move(path)), version_(version) {
  AT_CHECK(version == kShardVersion16 || version == kShardVersion32, "shard version ", version,
           " is not 1 (uint16) or 2 (uint32)");
  out_.open(path_, std::ios::binary | std::ios::trunc);
  AT_CHECK(out_, "cannot create shard ", path_.string(), ": ", std::strerror(errno));
  const std::array<int32_t, kShardHeaderInts> header{};
  out_.write(reinterpret_cast<const char*>(header.data()), kShardHeaderBytes);
}

ShardWriter::~ShardWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // Destructors must not throw; callers that care call close() themselves.
  }
}

void ShardWriter::append(std::span<const int32_t> tokens) {
  const int64_t limit = version_ == kShardVersion16 ? 65536 : (int64_t{1} << 32);
  for (size_t i = 0; i < tokens.size(); ++i) {
    AT_CHECK(tokens[i] >= 0 && tokens[i] < limit, "shard ", path_.string(), ": token id ",
             tokens[i], " does not fit format version ", version_,
             version_ == kShardVersion16 ? " (uint16 ids)" : " (uint32 ids)");
  }
  if (version_ == kShardVersion16) {
    narrow_.assign(tokens.begin(), tokens.end());
    out_.write(reinterpret_cast<const char*>(narrow_.data()),
               static_cast<std::streamsize>(narrow_.size() * sizeof(uint16_t)));
  } else {
    out_.write(reinterpret_cast<const char*>(tokens.data()),
               static_cast<std::streamsize>(tokens.size_bytes()));
  }
  AT_CHECK(out_, "cannot write shard ", path_.string(), " (disk full?)");
  tokens_ += tokens.size();
}

void ShardWriter::close() {
  if (!out_.is_open()) return;
  AT_CHECK(tokens_ <= static_cast<uint64_t>(INT32_MAX), "shard ", path_.string(), " holds ",
           tokens_, " tokens; the format's header counts at most ", INT32_MAX);
  std::array<int32_t, kShardHeaderInts> header{};
  header[0] = kShardMagic;
  header[1] = version_;
  header[2] = static_cast<int32_t>(tokens_);
  out_.seekp(0);
  out_.write(reinterpret_cast<const char*>(header.data()), kShardHeaderBytes);
  out_.close();
  AT_CHECK(out_, "cannot finish shard ", path_.string(), " (disk full?)");
}

void write_shard(const std::filesystem::path& path, std::span<const uint16_t> tokens) {
  ShardWriter writer(path, kShardVersion16);
  const std::vector<int32_t> wide(tokens.begin(), tokens.end());
  writer.append(wide);
  writer.close();
}

void write_shard(const std::filesystem::path& path, std::span<const uint32_t> tokens) {
  ShardWriter writer(path, kShardVersion32);
  for (const uint32_t token : tokens) {
    AT_CHECK(token <= INT32_MAX, "shard ", path.string(), ": token id ", token,
             " is larger than autotrain's ids (int32)");
  }
  writer.append(std::span(reinterpret_cast<const int32_t*>(tokens.data()), tokens.size()));
  writer.close();
}

ShardReader::ShardReader(std::filesystem::path path) : file_(std::move(path), "shard") {
  const std::string name = file_.path().string();
  const auto file_bytes = static_cast<uint64_t>(file_.size());
  AT_CHECK(file_bytes >= kShardHeaderBytes, "shard ", name, " is truncated: ", file_bytes,
           " bytes, shorter than the ", kShardHeaderBytes, "-byte header", kRemedy);
  const auto* header = reinterpret_cast<const int32_t*>(file_.data());
  AT_CHECK(header[0] == kShardMagic, "shard ", name, " has magic ", header[0], ", expected ",
           kShardMagic, " (an llm.c / autotrain token shard)", kRemedy);
  AT_CHECK(header[1] == kShardVersion16 || header[1] == kShardVersion32, "shard ", name,
           " has format version ", header[1],
           "; this build reads versions 1 (uint16 tokens) and 2 (uint32 tokens)", kRemedy);
  version_ = header[1];
  AT_CHECK(header[2] >= 0, "shard ", name, " has a negative token count ", header[2], kRemedy);
  const uint64_t count = static_cast<uint64_t>(header[2]);
  const uint64_t expected_bytes = kShardHeaderBytes + count * shard_token_bytes(version_);
  AT_CHECK(file_bytes == expected_bytes, "shard ", name,
           file_bytes < expected_bytes ? " is truncated" : " has trailing bytes",
           ": its header says ", count, " tokens (", expected_bytes, " bytes) but the file has ",
           file_bytes, " bytes", kRemedy);
  body_ = file_.data() + kShardHeaderBytes;
  count_ = count;
}

void ShardReader::copy(uint64_t first, std::span<int32_t> out) const {
  AT_CHECK(first + out.size() <= count_, "shard ", path().string(), ": tokens [", first, ", ",
           first + out.size(), ") are past its end (", count_, " tokens)");
  if (version_ == kShardVersion16) {
    const auto* body = reinterpret_cast<const uint16_t*>(body_) + first;
    std::copy(body, body + out.size(), out.begin());
  } else {
    const auto* body = reinterpret_cast<const uint32_t*>(body_) + first;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(body[i]);
  }
}

TokenDataset::TokenDataset(const std::vector<std::filesystem::path>& shard_paths) {
  offsets_.push_back(0);
  for (const auto& path : shard_paths) {
    shards_.emplace_back(path);
    offsets_.push_back(offsets_.back() + shards_.back().size());
  }
  size_t with_mask = 0;
  for (const auto& path : shard_paths) with_mask += std::filesystem::exists(mask_path(path));
  if (with_mask == 0) return;
  for (const ShardReader& shard : shards_) {
    AT_CHECK(std::filesystem::exists(mask_path(shard.path())), "loss mask ",
             mask_path(shard.path()).string(), " is missing, but ", with_mask,
             " other shards of the split have one", kRemedy);
    masks_.emplace_back(mask_path(shard.path()), shard.size());
  }
}

TokenDataset TokenDataset::open(const std::filesystem::path& dir, const std::string& split) {
  const auto paths = list_shards(dir, split);
  AT_CHECK(!paths.empty(), "no shards of split '", split, "' in ", dir.string(), " (expected ",
           shard_path(dir, split, 0).filename().string(),
           ", ...); create them with `autotrain prepare`");
  return TokenDataset(paths);
}

void TokenDataset::copy(uint64_t start, std::span<int32_t> out) const {
  AT_CHECK(start + out.size() <= num_tokens(), "token range [", start, ", ", start + out.size(),
           ") is past the end of the dataset (", num_tokens(), " tokens)");
  size_t shard = shard_of(start);
  size_t written = 0;
  while (written < out.size()) {
    const ShardReader& reader = shards_[shard];
    const uint64_t local = start + written - offsets_[shard];
    const size_t take = std::min<uint64_t>(reader.size() - local, out.size() - written);
    reader.copy(local, out.subspan(written, take));
    written += take;
    ++shard;
  }
}

size_t TokenDataset::shard_of(uint64_t index) const {
  return static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), index) -
                             offsets_.begin()) -
         1;
}

void TokenDataset::mask_targets(uint64_t start, std::span<int32_t> targets) const {
  if (masks_.empty()) return;
  AT_CHECK(start + targets.size() <= num_tokens(), "token range [", start, ", ",
           start + targets.size(), ") is past the end of the dataset (", num_tokens(), " tokens)");
  size_t shard = shard_of(start);
  for (size_t i = 0; i < targets.size(); ++i) {
    while (start + i >= offsets_[shard + 1]) ++shard;
    if (!masks_[shard].carries_loss(start + i - offsets_[shard])) targets[i] = kIgnoreTarget;
  }
}

uint64_t TokenDataset::loss_tokens(uint64_t start, uint64_t count) const {
  if (masks_.empty()) return count;
  AT_CHECK(start + count <= num_tokens(), "token range [", start, ", ", start + count,
           ") is past the end of the dataset (", num_tokens(), " tokens)");
  uint64_t carrying = 0;
  size_t shard = shard_of(start);
  for (uint64_t i = start; i < start + count; ++i) {
    while (i >= offsets_[shard + 1]) ++shard;
    carrying += masks_[shard].carries_loss(i - offsets_[shard]);
  }
  return carrying;
}

void TokenDataset::check_ids_below(int64_t vocab_size) const {
  for (const ShardReader& reader : shards_) {
    if (vocab_size >= 65536 && reader.version() == kShardVersion16) continue;
    for (uint64_t i = 0; i < reader.size(); ++i) {
      const int64_t id = static_cast<uint32_t>(reader.token(i));
      AT_CHECK(id < vocab_size, "shard ", reader.path().string(), " holds token id ", id,
               " at position ", i, ", outside the model's vocabulary of ", vocab_size,
               " tokens: it was prepared with another tokenizer; prepare it again with the "
               "model's tokenizer");
    }
  }
}

}  // namespace autotrain::data
