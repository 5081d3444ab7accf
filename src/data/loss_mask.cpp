#include "autotrain/data/loss_mask.hpp"

#include <array>
#include <cerrno>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/data/shard.hpp"

namespace autotrain::data {
namespace {

constexpr const char* kRemedy = "; re-create it with `autotrain prepare` (docs/data.md)";

std::array<int32_t, kShardHeaderInts> header_for(uint64_t tokens) {
  std::array<int32_t, kShardHeaderInts> header{};
  header[0] = kMaskMagic;
  header[1] = kMaskVersion;
  header[2] = static_cast<int32_t>(tokens);
  return header;
}

}  // namespace

std::filesystem::path mask_path(const std::filesystem::path& shard) {
  std::filesystem::path path = shard;
  path.replace_extension(".mask");
  return path;
}

MaskWriter::MaskWriter(std::filesystem::path path) : path_(std::move(path)) {
  out_.open(path_, std::ios::binary | std::ios::trunc);
  AT_CHECK(out_, "cannot create loss mask ", path_.string(), ": ", std::strerror(errno));
  const auto header = header_for(0);
  out_.write(reinterpret_cast<const char*>(header.data()), kShardHeaderBytes);
}

MaskWriter::~MaskWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // Destructors must not throw; callers that care call close() themselves.
  }
}

void MaskWriter::append(std::span<const uint8_t> flags) {
  for (const uint8_t flag : flags) {
    if (flag != 0) pending_ |= static_cast<uint8_t>(1u << (tokens_ % 8));
    ++tokens_;
    if (tokens_ % 8 == 0) {
      out_.put(static_cast<char>(pending_));
      pending_ = 0;
    }
  }
  AT_CHECK(out_, "cannot write loss mask ", path_.string(), " (disk full?)");
}

void MaskWriter::close() {
  if (!out_.is_open()) return;
  if (tokens_ % 8 != 0) out_.put(static_cast<char>(pending_));
  AT_CHECK(tokens_ <= 0x7fffffffu, "loss mask ", path_.string(), ": ", tokens_,
           " tokens exceed the format's int32 count");
  const auto header = header_for(tokens_);
  out_.seekp(0);
  out_.write(reinterpret_cast<const char*>(header.data()), 3 * sizeof(int32_t));
  out_.close();
  AT_CHECK(!out_.fail(), "cannot finish loss mask ", path_.string(), " (disk full?)");
}

MaskReader::MaskReader(std::filesystem::path path, uint64_t tokens)
    : path_(std::move(path)), tokens_(tokens) {
  std::ifstream in(path_, std::ios::binary);
  AT_CHECK(in, "cannot open loss mask ", path_.string(), ": ", std::strerror(errno));
  std::array<int32_t, kShardHeaderInts> header{};
  in.read(reinterpret_cast<char*>(header.data()), kShardHeaderBytes);
  AT_CHECK(in && header[0] == kMaskMagic, "loss mask ", path_.string(),
           " has no loss-mask header (magic ", kMaskMagic, ")", kRemedy);
  AT_CHECK(header[1] == kMaskVersion, "loss mask ", path_.string(), " has version ", header[1],
           "; this autotrain reads version ", kMaskVersion, kRemedy);
  AT_CHECK(header[2] >= 0 && static_cast<uint64_t>(header[2]) == tokens, "loss mask ",
           path_.string(), " covers ", header[2], " tokens but its shard holds ", tokens, kRemedy);
  bits_.resize((tokens + 7) / 8);
  in.read(reinterpret_cast<char*>(bits_.data()), static_cast<std::streamsize>(bits_.size()));
  AT_CHECK(in.gcount() == static_cast<std::streamsize>(bits_.size()), "loss mask ", path_.string(),
           " is truncated: ", bits_.size(), " bytes of flags expected", kRemedy);
  AT_CHECK(in.peek() == std::char_traits<char>::eof(), "loss mask ", path_.string(),
           " is longer than its ", tokens, " tokens need", kRemedy);
}

void MaskReader::copy(uint64_t first, std::span<uint8_t> out) const {
  AT_CHECK(first + out.size() <= tokens_, "loss mask ", path_.string(), ": tokens [", first, ", ",
           first + out.size(), ") are past its end (", tokens_, " tokens)");
  for (size_t i = 0; i < out.size(); ++i) out[i] = carries_loss(first + i) ? 1 : 0;
}

void truncate_mask(const std::filesystem::path& path, uint64_t tokens) {
  std::vector<uint8_t> flags(tokens);
  {
    std::ifstream in(path, std::ios::binary);
    std::array<int32_t, kShardHeaderInts> header{};
    in.read(reinterpret_cast<char*>(header.data()), kShardHeaderBytes);
    AT_CHECK(in && header[0] == kMaskMagic && header[2] >= 0, "loss mask ", path.string(),
             " is not a loss mask", kRemedy);
    MaskReader(path, static_cast<uint64_t>(header[2])).copy(0, flags);
  }
  MaskWriter writer(path);
  writer.append(flags);
  writer.close();
}

void check_loss_counts(const LossCounts& counts, const std::string& split,
                       const std::string& files) {
  if (counts.conversations == 0) return;
  AT_CHECK(counts.loss_tokens > 0, "split '", split, "' (", files,
           "): no token carries loss: none of its ", counts.conversations,
           " conversations has an assistant turn, and train_on_completions_only trains on the "
           "assistant turns only; add the assistant replies, or set train_on_completions_only "
           "false to train on the whole conversations");
  if (counts.without_loss > 0)
    log::warn("split '", split, "' (", files, "): ", counts.without_loss, " of ",
              counts.conversations,
              " conversations have no assistant turn and train on nothing "
              "(train_on_completions_only)");
}

}  // namespace autotrain::data
