#include "bpe.hpp"

#include <algorithm>
#include <cstdio>

#include "autotrain/core/error.hpp"
#include "autotrain/data/unicode.hpp"
#include "byte_level.hpp"

namespace autotrain::data {
namespace {

std::string byte_fallback_spelling(uint8_t byte) {
  char spelling[8];
  std::snprintf(spelling, sizeof(spelling), "<0x%02X>", byte);
  return spelling;
}

}  // namespace

BpeModel::BpeModel(TokenMap vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, const std::string& where)
    : options_(std::move(options)), by_spelling_(std::move(vocab)) {
  TokenId largest = -1;
  for (const auto& [spelling, id] : by_spelling_) {
    AT_CHECK(id >= 0, where, ".vocab: token '", spelling, "' has a negative id ", id);
    largest = std::max(largest, id);
  }
  spellings_.resize(static_cast<size_t>(largest) + 1);
  byte_ids_.fill(-1);
  if (options_.byte_level) by_piece_.reserve(by_spelling_.size());
  for (const auto& [spelling, id] : by_spelling_) {
    AT_CHECK(spellings_[static_cast<size_t>(id)].empty(), where, ".vocab: id ", id,
             " is given to both '", spellings_[static_cast<size_t>(id)], "' and '", spelling, "'");
    spellings_[static_cast<size_t>(id)] = spelling;
    if (!options_.byte_level) continue;
    // Entries outside the byte alphabet (special tokens) cannot come out of text.
    if (auto bytes = byte_level::spelling_to_bytes(spelling)) by_piece_.emplace(*bytes, id);
  }
  if (!options_.byte_level) by_piece_ = by_spelling_;
  for (int byte = 0; byte < 256; ++byte) {
    const std::string key = options_.byte_level
                                ? std::string(1, static_cast<char>(byte))
                                : byte_fallback_spelling(static_cast<uint8_t>(byte));
    const TokenMap& map = options_.byte_level ? by_piece_ : by_spelling_;
    const auto it = map.find(key);
    if (it != map.end()) byte_ids_[static_cast<size_t>(byte)] = it->second;
  }
  if (options_.byte_level) {
    for (int byte = 0; byte < 256; ++byte) {
      AT_CHECK(byte_ids_[static_cast<size_t>(byte)] >= 0, where,
               ".vocab: a byte-level vocabulary needs a token for every byte, but byte ", byte,
               " ('", byte_level::bytes_to_spelling(std::string(1, static_cast<char>(byte))),
               "') has none");
    }
  }
  if (options_.unk_token) {
    const auto it = by_spelling_.find(*options_.unk_token);
    AT_CHECK(it != by_spelling_.end(), where, ".unk_token: '", *options_.unk_token,
             "' is not in the vocabulary");
    unk_ = it->second;
  }
  merges_.reserve(merges.size());
  std::string joined;  // one buffer for every merged spelling
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_id = by_spelling_.find(left);
    const auto right_id = by_spelling_.find(right);
    joined.assign(left).append(right);
    const auto merged_id = by_spelling_.find(joined);
    AT_CHECK(left_id != by_spelling_.end() && right_id != by_spelling_.end() &&
                 merged_id != by_spelling_.end(),
             where, ".merges[", rank, "]: merge '", left, " ", right, "' names a token (",
             left_id == by_spelling_.end()    ? left
             : right_id == by_spelling_.end() ? right
                                              : left + right,
             ") that is not in the vocabulary");
    // A repeated pair takes its last rank, as in Hugging Face's map.
    merges_.insert_or_assign(pair_key(left_id->second, right_id->second),
                             Merge{static_cast<int>(rank), merged_id->second});
  }
}

std::optional<TokenId> BpeModel::find(std::string_view spelling) const {
  const auto it = by_spelling_.find(spelling);
  if (it == by_spelling_.end()) return {};
  return it->second;
}

bool BpeModel::spelled_within(std::string_view text) const {
  return std::any_of(spellings_.begin(), spellings_.end(), [&](const std::string& spelling) {
    return spelling != text && spelling.find(text) != std::string::npos;
  });
}

const BpeModel::Merge* BpeModel::find_merge(TokenId left, TokenId right) const {
  const auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<Symbol>& symbols) const {
  symbols.clear();
  const auto push = [&](TokenId id) {
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1});
  };
  if (options_.byte_level) {
    for (const char byte : piece) push(byte_ids_[static_cast<uint8_t>(byte)]);
  } else {
    bool last_was_unk = false;
    for (size_t pos = 0; pos < piece.size();) {
      const size_t length = unicode::decode_utf8(piece, pos).length;
      const auto it = by_piece_.find(piece.substr(pos, length));
      if (it != by_piece_.end()) {
        push(it->second);
        last_was_unk = false;
      } else if (options_.byte_fallback &&
                 std::all_of(piece.begin() + static_cast<long>(pos),
                             piece.begin() + static_cast<long>(pos + length), [&](char byte) {
                               return byte_ids_[static_cast<uint8_t>(byte)] >= 0;
                             })) {
        for (size_t i = pos; i < pos + length; ++i) push(byte_ids_[static_cast<uint8_t>(piece[i])]);
        last_was_unk = false;
      } else if (unk_ >= 0) {
        if (!(options_.fuse_unk && last_was_unk)) push(unk_);
        last_was_unk = true;
      }
      pos += length;
    }
  }
  if (!symbols.empty()) symbols.back().next = -1;
}

void BpeModel::merge(std::vector<Symbol>& symbols) const {
  struct Candidate {
    int rank;
    int pos;
    TokenId merged;
  };
  // A min-heap on (rank, pos): lowest rank first, leftmost first among equal ranks.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  thread_local std::vector<Candidate> heap;
  heap.clear();
  const auto offer = [&](int pos) {
    const int next = symbols[static_cast<size_t>(pos)].next;
    if (next < 0) return;
    if (const Merge* found = find_merge(symbols[static_cast<size_t>(pos)].id,
                                        symbols[static_cast<size_t>(next)].id)) {
      heap.push_back({found->rank, pos, found->merged});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int pos = 0; pos + 1 < static_cast<int>(symbols.size()); ++pos) offer(pos);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (left.id < 0 || left.next < 0) continue;  // merged away, or now the last symbol
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    const Merge* current = find_merge(left.id, right.id);
    if (current == nullptr || current->merged != top.merged) continue;  // a stale pair
    left.id = top.merged;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) offer(left.prev);
    offer(top.pos);
  }
}

void BpeModel::encode(std::string_view piece, std::vector<TokenId>& ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    if (const auto it = by_piece_.find(piece); it != by_piece_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  initial_symbols(piece, symbols);
  if (symbols.size() > 1) merge(symbols);
  for (const Symbol& symbol : symbols) {
    if (symbol.id >= 0) ids.push_back(symbol.id);
  }
}

}  // namespace autotrain::data
