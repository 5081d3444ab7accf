// TRL's tokenization of a preference pair (data/preference.hpp states the rules).
#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/data/preference.hpp"

namespace autotrain::data {
namespace {

bool starts_with(const std::vector<TokenId>& ids, const std::vector<TokenId>& prefix) {
  return ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

bool ends_with(const std::vector<TokenId>& ids, const std::vector<TokenId>& suffix) {
  return ids.size() >= suffix.size() && std::equal(suffix.rbegin(), suffix.rend(), ids.rbegin());
}

// The tokenizer's special tokens around `ids` (its post-processor's template, with
// add_bos_token / add_eos_token), each left out where the text already holds it: a chat template
// writes its own bos_token.
void frame(std::vector<TokenId>& ids, const DocumentFrame& special, bool suffix) {
  if (!starts_with(ids, special.prefix))
    ids.insert(ids.begin(), special.prefix.begin(), special.prefix.end());
  if (suffix && !ends_with(ids, special.suffix))
    ids.insert(ids.end(), special.suffix.begin(), special.suffix.end());
}

// TRL's RewardTrainer: each sequence whole, with special tokens; a pair either of whose
// sequences is longer than max_length is dropped (AutoTrain's and TRL's filter).
PairTokens reward_pair(const PairText& text, const Tokenizer& tokenizer,
                       const PreferenceOptions& options) {
  const DocumentFrame special = tokenizer.document_frame(false);
  PairTokens pair;
  pair.chosen = tokenizer.encode(text.chosen);
  pair.rejected = tokenizer.encode(text.rejected);
  for (auto* sequence : {&pair.chosen, &pair.rejected}) {
    frame(*sequence, special, true);
    AT_CHECK(!sequence->empty(), "a ", sequence == &pair.chosen ? "chosen" : "rejected",
             " text is empty and the tokenizer adds no special token: a reward model scores "
             "the last token of each sequence");
    if (options.max_length > 0 && sequence->size() > size_t(options.max_length))
      pair.dropped = true;
  }
  return pair;
}

// Cuts `completion` to max_completion_length, then prompt + completion to max_length; whether
// it was cut. Empty when the prompt fills max_length.
bool truncate_completion(std::vector<TokenId>& completion, size_t prompt,
                         const PreferenceOptions& options) {
  const size_t before = completion.size();
  if (options.max_completion_length > 0)
    completion.resize(std::min(completion.size(), size_t(options.max_completion_length)));
  if (options.max_length > 0 && prompt + completion.size() > size_t(options.max_length))
    completion.resize(prompt >= size_t(options.max_length) ? 0 : options.max_length - prompt);
  return completion.size() < before;
}

}  // namespace

PairTokens tokenize_pair(const PairText& text, const Tokenizer& tokenizer,
                         const PreferenceOptions& options) {
  if (options.reward) return reward_pair(text, tokenizer, options);
  const TokenId eos = tokenizer.eot_token();
  AT_CHECK(eos >= 0, "tokenizer ", tokenizer.name(),
           " has no end-of-text token (no eos_token in its tokenizer_config.json), which ends "
           "every completion of a preference pair");
  PairTokens pair;
  pair.prompt = tokenizer.encode(text.prompt);
  frame(pair.prompt, tokenizer.document_frame(false), false);
  if (options.max_prompt_length > 0 && pair.prompt.size() > size_t(options.max_prompt_length)) {
    pair.prompt.erase(pair.prompt.begin(), pair.prompt.end() - options.max_prompt_length);
    pair.prompt_truncated = true;
  }
  pair.chosen = tokenizer.encode(text.chosen);
  pair.rejected = tokenizer.encode(text.rejected);
  for (auto* completion : {&pair.chosen, &pair.rejected}) {
    completion->push_back(eos);
    pair.completions_truncated += truncate_completion(*completion, pair.prompt.size(), options);
    if (completion->empty()) pair.dropped = true;
  }
  return pair;
}

}  // namespace autotrain::data
