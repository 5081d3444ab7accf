// PairDataset: a split's token shards (TokenDataset) and its pair index, both memory-mapped;
// load_pair_rows lays pairs out as the preference trainers' rows.
#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/data/preference.hpp"
#include "pair_files.hpp"

namespace autotrain::data {
namespace {

constexpr const char* kPairsRemedy = "; delete it to prepare the pairs again";

const uint64_t* words(const MappedFile& file) {
  return reinterpret_cast<const uint64_t*>(file.data());
}

// The index's header checked against its size and the shards' token count.
void check_index(const MappedFile& index, uint64_t tokens) {
  const std::string name = index.path().string();
  AT_CHECK(index.size() >= pair_index_bytes(0), "pair index ", name, " is truncated (",
           index.size(), " bytes)", kPairsRemedy);
  const uint64_t* header = words(index);
  AT_CHECK(header[0] == kPairIndexMagic && header[1] == kPairIndexVersion, "pair index ", name,
           " is not an autotrain pair index of version ", kPairIndexVersion, kPairsRemedy);
  AT_CHECK(index.size() == pair_index_bytes(header[2]), "pair index ", name, " holds ",
           index.size(), " bytes; its header's ", header[2], " pairs need ",
           pair_index_bytes(header[2]), kPairsRemedy);
  AT_CHECK(header[3] == tokens, "pair index ", name, " counts ", header[3],
           " tokens but its shards hold ", tokens, kPairsRemedy);
}

}  // namespace

PairDataset::PairDataset(const PairSplit& split)
    : tokens_(split.files), index_(split.index, "pair index") {
  check_index(index_, tokens_.num_tokens());
  const uint64_t* header = words(index_);
  pairs_ = header[2];
  pad_ = static_cast<TokenId>(header[5]);
  reward_ = header[6] != 0;
  const uint64_t* offsets = header + kPairIndexHeaderWords;
  AT_CHECK(offsets[0] == 0 && offsets[3 * pairs_] == tokens_.num_tokens(), "pair index ",
           split.index.string(), ": its offsets do not span the shards' tokens", kPairsRemedy);
  for (uint64_t i = 1; i <= 3 * pairs_; ++i) {
    AT_CHECK(offsets[i - 1] <= offsets[i], "pair index ", split.index.string(), ": offset ", i,
             " is out of order", kPairsRemedy);
  }
}

uint64_t PairDataset::offset(uint64_t pair, int boundary) const {
  return words(index_)[kPairIndexHeaderWords + 3 * pair + static_cast<uint64_t>(boundary)];
}

uint64_t PairDataset::length(uint64_t pair, PairPart part) const {
  AT_CHECK(pair < pairs_, "pair ", pair, " is outside the split's ", pairs_, " pairs");
  const int first = static_cast<int>(part);
  return offset(pair, first + 1) - offset(pair, first);
}

void PairDataset::copy(uint64_t pair, PairPart part, std::span<TokenId> out) const {
  AT_CHECK(out.size() == length(pair, part), "pair ", pair, ": a part of ", length(pair, part),
           " tokens copied into ", out.size());
  tokens_.copy(offset(pair, static_cast<int>(part)), out);
}

std::vector<TokenId> PairDataset::ids(uint64_t pair, PairPart part) const {
  std::vector<TokenId> out(length(pair, part));
  copy(pair, part, out);
  return out;
}

uint64_t PairDataset::max_sequence_length() const {
  uint64_t longest = 0;
  for (uint64_t i = 0; i < pairs_; ++i) {
    const uint64_t prompt = length(i, PairPart::prompt);
    longest = std::max(
        {longest, prompt + length(i, PairPart::chosen), prompt + length(i, PairPart::rejected)});
  }
  return longest;
}

void PairDataset::check_ids_below(int vocab_size) const {
  tokens_.check_ids_below(vocab_size);
  AT_CHECK(pad_ >= 0 && pad_ < vocab_size, "the pairs' pad token ", pad_,
           " is outside the model's vocabulary of ", vocab_size,
           " tokens: they were prepared with another tokenizer");
}

namespace {

// One row: prompt then `completion` of `pair` in inputs[0..n), pad after; targets on the
// completion's tokens.
void load_row(const PairDataset& dataset, uint64_t pair, PairPart completion, size_t T,
              std::span<int32_t> inputs, std::span<int32_t> targets, int32_t& length) {
  const size_t prompt = dataset.length(pair, PairPart::prompt);
  const size_t n = prompt + dataset.length(pair, completion);
  AT_CHECK(n <= T, "pair ", pair, " has a sequence of ", n, " tokens, longer than the rows' ", T,
           " (prepare the pairs with max_length <= block_size)");
  dataset.copy(pair, PairPart::prompt, inputs.first(prompt));
  dataset.copy(pair, completion, inputs.subspan(prompt, n - prompt));
  std::fill(inputs.begin() + static_cast<std::ptrdiff_t>(n), inputs.end(), dataset.pad_token());
  // targets[t] = s[t + 1] where t + 1 is a completion position: t + 1 in [prompt, n).
  for (size_t t = 0; t < T; ++t)
    targets[t] = t + 1 >= prompt && t + 1 < n ? inputs[t + 1] : kIgnoreTarget;
  length = static_cast<int32_t>(n);
}

}  // namespace

void load_pair_rows(const PairDataset& dataset, std::span<const uint64_t> pairs, int T,
                    std::span<int32_t> inputs, std::span<int32_t> targets,
                    std::span<int32_t> lengths) {
  const size_t B = pairs.size();
  const auto width = static_cast<size_t>(T);
  AT_CHECK(T > 0 && inputs.size() == 2 * B * width && targets.size() == inputs.size() &&
               lengths.size() == 2 * B,
           "pair rows: buffers of ", inputs.size(), ", ", targets.size(), " and ", lengths.size(),
           " for ", B, " pairs of T = ", T, "; expected 2B x T, 2B x T and 2B");
  for (size_t b = 0; b < B; ++b) {
    for (const auto& [row, part] : {std::pair{b, PairPart::chosen}, {B + b, PairPart::rejected}}) {
      load_row(dataset, pairs[b], part, width, inputs.subspan(row * width, width),
               targets.subspan(row * width, width), lengths[row]);
    }
  }
}

}  // namespace autotrain::data
