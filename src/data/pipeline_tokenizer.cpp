#include "pipeline_tokenizer.hpp"

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "autotrain/core/error.hpp"
#include "autotrain/data/unicode.hpp"

namespace autotrain::data {
namespace {

// Pieces recur constantly in text, so each thread caches piece -> ids (bounded, cleared when
// full; no locks).
using PieceCache =
    std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>>;
constexpr size_t kMaxCachedPieces = 1 << 18;
constexpr size_t kMaxCachedPieceBytes = 256;
std::atomic<uint64_t> next_instance_id{1};

class PipelineTokenizer final : public Tokenizer {
 public:
  explicit PipelineTokenizer(TokenizerParts parts)
      : parts_(std::move(parts)), instance_id_(next_instance_id++) {
    std::vector<AddedToken> raw;
    std::vector<AddedToken> normalized;
    vocab_size_ = parts_.model->size();
    spellings_.resize(static_cast<size_t>(vocab_size_));
    for (const auto& token : parts_.added_tokens) {
      vocab_size_ = std::max(vocab_size_, token.id + 1);
      if (static_cast<size_t>(token.id) >= spellings_.size())
        spellings_.resize(static_cast<size_t>(token.id) + 1);
      spellings_[static_cast<size_t>(token.id)] = token.content;
      AddedToken matched = token;
      matched.as_text = token.special && !parts_.parse_special_tokens;
      // A normalized token is looked for in normalized text, spelled as the normalizer
      // rewrites it (Hugging Face normalizes its content too).
      if (token.normalized && parts_.normalizer)
        parts_.normalizer->normalize(matched.content, false);
      (token.normalized ? normalized : raw).push_back(std::move(matched));
    }
    for (TokenId id = 0; id < parts_.model->size(); ++id) {
      auto& spelling = spellings_[static_cast<size_t>(id)];
      if (spelling.empty()) spelling = parts_.model->spelling(id);
    }
    raw_matcher_ = AddedTokenMatcher(std::move(raw));
    normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
    // "\n" as the vocabulary spells it ("Ċ" at byte level), and as its byte-fallback token:
    // a barrier when it has a token of its own that no other token contains.
    const BpeModel& model = *parts_.model;
    const std::string newline = model.options().byte_level ? "\xC4\x8A" : "\n";
    const bool own_token =
        model.find(newline) || (model.options().byte_fallback && model.find("<0x0A>"));
    newline_barrier_ = own_token && !model.spelled_within(newline) &&
                       !(model.options().byte_fallback && model.spelled_within("<0x0A>"));
  }

  std::string name() const override { return parts_.name; }
  int vocab_size() const override { return vocab_size_; }
  TokenId eot_token() const override { return parts_.eot; }
  std::optional<TokenId> pad_token() const override { return parts_.pad; }
  std::vector<TokenId> stop_tokens() const override { return parts_.stop_tokens; }
  std::vector<std::filesystem::path> vocabulary_files() const override { return parts_.files; }
  ChatSettings chat_settings() const override { return parts_.chat; }

  DocumentFrame document_frame(bool add_eos_token) const override {
    if (parts_.eot_before_documents) {
      return add_eos_token ? DocumentFrame{{parts_.eot}, {}} : DocumentFrame{};
    }
    DocumentFrame frame = parts_.template_frame;
    if (add_eos_token && parts_.eot >= 0 &&
        (frame.suffix.empty() || frame.suffix.back() != parts_.eot))
      frame.suffix.push_back(parts_.eot);
    return frame;
  }

  bool cuts_at_newlines() const override;
  bool cuts_at_spaces() const override;

  void encode_append(std::string_view text, std::vector<TokenId>& ids,
                     TextPosition position) const override {
    const size_t bad = unicode::invalid_utf8_offset(text);
    AT_CHECK(bad == std::string_view::npos, "text is not valid UTF-8 at byte offset ", bad,
             " (byte 0x", std::hex, static_cast<int>(static_cast<uint8_t>(text[bad])), ")");
    thread_local std::vector<Section> sections;
    raw_matcher_.split(text, sections);
    for (const Section& section : sections) {
      if (section.id >= 0) {
        ids.push_back(section.id);
        continue;
      }
      const TextPlace place{section.begin == 0,
                            section.begin == 0 && position == TextPosition::continuation};
      encode_text(text.substr(section.begin, section.end - section.begin), place, ids);
    }
  }

  std::string decode(std::span<const TokenId> ids) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const TokenId id : ids) {
      AT_CHECK(id >= 0 && id < vocab_size_, "token id ", id, " is outside the ", parts_.name,
               " vocabulary [0, ", vocab_size_, ")");
      tokens.push_back(spellings_[static_cast<size_t>(id)]);
    }
    if (!parts_.decoder) {
      std::string joined;
      for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
      return joined;
    }
    parts_.decoder->decode_chain(tokens);
    std::string text;
    for (const auto& token : tokens) text += token;
    return text;
  }

 private:
  // One stretch of text between added tokens: normalize, split out the added tokens that
  // match normalized text, pre-tokenize, BPE.
  void encode_text(std::string_view text, TextPlace place, std::vector<TokenId>& ids) const {
    thread_local Pieces pieces;
    thread_local Pieces scratch;
    pieces.text.assign(text);
    if (parts_.normalizer) parts_.normalizer->normalize(pieces.text, place.continues_cut);
    if (normalized_matcher_.empty()) {
      pieces.spans.assign(1, {0, pieces.text.size()});
      encode_pieces(pieces, scratch, place, ids);
      return;
    }
    thread_local std::vector<Section> sections;
    thread_local std::string normalized;
    normalized_matcher_.split(pieces.text, sections);
    normalized = pieces.text;
    for (const Section& section : sections) {
      if (section.id >= 0) {
        ids.push_back(section.id);
        continue;
      }
      pieces.text.assign(normalized, section.begin, section.end - section.begin);
      pieces.spans.assign(1, {0, pieces.text.size()});
      const TextPlace sub{place.document_start && section.begin == 0,
                          place.continues_cut && section.begin == 0};
      encode_pieces(pieces, scratch, sub, ids);
    }
  }

  void encode_pieces(Pieces& pieces, Pieces& scratch, TextPlace place,
                     std::vector<TokenId>& ids) const {
    if (pieces.text.empty()) return;
    if (parts_.pre_tokenizer) parts_.pre_tokenizer->split(pieces, scratch, place);
    thread_local PieceCache cache;
    thread_local uint64_t cache_owner = 0;
    if (cache_owner != instance_id_) {
      cache.clear();
      cache_owner = instance_id_;
    }
    for (const auto& [begin, end] : pieces.spans) {
      std::string_view piece = std::string_view(pieces.text).substr(begin, end - begin);
      if (!newline_barrier_) {
        encode_piece(piece, cache, ids);
        continue;
      }
      // No merge joins a newline to anything, so the lines of a piece (Mistral's pieces are
      // whole texts) are encoded, and cached, one by one with the same result.
      for (size_t newline = piece.find('\n'); newline != std::string_view::npos;
           newline = piece.find('\n')) {
        encode_piece(piece.substr(0, newline), cache, ids);
        encode_piece(piece.substr(newline, 1), cache, ids);
        piece.remove_prefix(newline + 1);
      }
      encode_piece(piece, cache, ids);
    }
  }

  void encode_piece(std::string_view piece, PieceCache& cache, std::vector<TokenId>& ids) const {
    if (piece.empty()) return;
    if (piece.size() > kMaxCachedPieceBytes) {
      parts_.model->encode(piece, ids);
      return;
    }
    auto hit = cache.find(piece);
    if (hit == cache.end()) {
      if (cache.size() >= kMaxCachedPieces) cache.clear();
      std::vector<TokenId> piece_ids;
      parts_.model->encode(piece, piece_ids);
      hit = cache.emplace(std::string(piece), std::move(piece_ids)).first;
    }
    ids.insert(ids.end(), hit->second.begin(), hit->second.end());
  }

  TokenizerParts parts_;
  uint64_t instance_id_;
  int vocab_size_ = 0;
  std::vector<std::string> spellings_;  // by id: added tokens' content, else the model's
  AddedTokenMatcher raw_matcher_;
  AddedTokenMatcher normalized_matcher_;
  bool newline_barrier_ = false;  // no token but the newline's own holds a newline
};

// The pre-tokenizer patterns for which a cut after "\n", or before " ", between two characters
// that are not whitespace is a piece boundary (checked by hand: no alternative of these
// patterns matches across such a newline, or holds a space it does not start with, and none
// looks behind or more than one character ahead): GPT-2's, Llama 3's and Qwen's.
bool is_known_cut_safe_pattern(const std::string& pattern) {
  static const std::string known[] = {
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
  };
  return std::find(std::begin(known), std::end(known), pattern) != std::end(known);
}

bool PipelineTokenizer::cuts_at_newlines() const {
  if (raw_matcher_.any_lstrip() || normalized_matcher_.any_lstrip()) return false;
  if (parts_.normalizer && parts_.normalizer->touches_newlines()) return false;
  const auto patterns =
      parts_.pre_tokenizer ? parts_.pre_tokenizer->patterns() : std::vector<std::string>{};
  if (!patterns.empty()) {
    // The first split decides where pieces end; later steps only cut pieces further.
    return is_known_cut_safe_pattern(patterns.front());
  }
  // No regex: the whole text is one BPE word, which a newline splits only if it never merges.
  return newline_barrier_;
}

bool PipelineTokenizer::cuts_at_spaces() const {
  // An added token that holds a space, or strips the whitespace around it, could span a cut.
  for (const AddedTokenMatcher* matcher : {&raw_matcher_, &normalized_matcher_}) {
    if (matcher->any_lstrip() || matcher->any_rstrip() || matcher->any_contains(' ')) return false;
  }
  if (parts_.normalizer && parts_.normalizer->touches_spaces()) return false;
  const auto patterns =
      parts_.pre_tokenizer ? parts_.pre_tokenizer->patterns() : std::vector<std::string>{};
  return !patterns.empty() && is_known_cut_safe_pattern(patterns.front());
}

}  // namespace

std::unique_ptr<Tokenizer> make_pipeline_tokenizer(TokenizerParts parts) {
  return std::make_unique<PipelineTokenizer>(std::move(parts));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 1);
  encode_append(text, ids, TextPosition::start);
  return ids;
}

}  // namespace autotrain::data
