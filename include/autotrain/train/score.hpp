#pragma once
// Rewards from a reward model's folder (a score head: *ForSequenceClassification with one label,
// as trainer: reward exports it), what `autotrain score` prints. Each text is tokenized with the
// folder's tokenizer and its special tokens (Hugging Face's tokenizer(text), as TRL's
// RewardTrainer tokenizes), cut to the model's positions as Hugging Face truncates (the special
// tokens kept, the text's end cut), and its reward is transformers' sequence classifier's: the
// score of the final norm's output at the last token that is not pad_token_id. On the CPU, one
// text at a time.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/data/tokenizer.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/train/generate.hpp"

namespace autotrain::train {

struct Reward {
  double value = 0;
  std::size_t tokens = 0;  // after truncation
  bool truncated = false;  // the text was cut to the model's positions
};

class RewardScorer {
 public:
  // Loads `dir` (load_model_folder with FolderHead::score: an Error names what else it is).
  explicit RewardScorer(const std::filesystem::path& dir);
  Reward score(const std::string& text) const;
  // The folder's pad_token_id (null in config.json: none).
  std::optional<int> pad_token_id() const { return pad_; }
  const model::ModelConfig& config() const { return loaded_.layout->config(); }

  // The ids the model reads for `text`: the tokenizer's special tokens around it, at most
  // `positions` of them (the text's end cut first); `truncated` says whether it was cut.
  static std::vector<data::TokenId> encode(const data::Tokenizer& tokenizer,
                                           const std::string& text, std::size_t positions,
                                           bool& truncated);

 private:
  LoadedModel loaded_;
  std::optional<int> pad_;
};

// Pairs of texts from a JSONL file (AutoTrain's preference data: one object per line with the
// chosen and rejected texts in the named columns). Errors name the file, the line and the column.
struct TextPair {
  std::string chosen, rejected;
};
std::vector<TextPair> read_text_pairs(const std::filesystem::path& file,
                                      const std::string& chosen_column,
                                      const std::string& rejected_column);

}  // namespace autotrain::train
