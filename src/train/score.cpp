// Rewards of texts from a reward model's folder (train/score.hpp).
#include "autotrain/train/score.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/model/folder.hpp"

namespace autotrain::train {

RewardScorer::RewardScorer(const std::filesystem::path& dir)
    : loaded_(load_model_folder(dir, FolderHead::score)) {
  const nlohmann::json config = model::read_config_json(dir);
  const auto pad = config.find("pad_token_id");
  if (pad != config.end() && pad->is_number_integer()) pad_ = pad->get<int>();
}

std::vector<data::TokenId> RewardScorer::encode(const data::Tokenizer& tokenizer,
                                                const std::string& text, std::size_t positions,
                                                bool& truncated) {
  const data::DocumentFrame frame = tokenizer.document_frame(false);
  std::vector<data::TokenId> ids = frame.prefix;
  tokenizer.encode_append(text, ids, data::TextPosition::start);
  const std::size_t special = frame.prefix.size() + frame.suffix.size();
  truncated = ids.size() + frame.suffix.size() > positions;
  if (truncated) ids.resize(positions > special ? positions - frame.suffix.size() : 0);
  ids.insert(ids.end(), frame.suffix.begin(), frame.suffix.end());
  if (ids.size() > positions) ids.resize(positions);  // special tokens alone longer than that
  return ids;
}

Reward RewardScorer::score(const std::string& text) const {
  const model::ParamLayout& layout = *loaded_.layout;
  Reward reward;
  const std::vector<data::TokenId> ids = encode(
      *loaded_.tokenizer, text, static_cast<std::size_t>(config().block_size), reward.truncated);
  AT_CHECK(!ids.empty(), "score: the text \"", text,
           "\" has no tokens and the tokenizer adds none around it: nothing to score");
  for (const auto id : ids) {
    AT_CHECK(id < config().vocab_size, "score: the text has token id ", id,
             ", outside the model's vocabulary of ", config().vocab_size,
             " (the folder's tokenizer is not the model's)");
  }
  reward.tokens = ids.size();
  // transformers' pooling: the last token that is not the pad token (the first when all are).
  std::size_t last = 0;
  for (std::size_t t = 0; t < ids.size(); ++t) {
    if (!pad_ || ids[t] != *pad_) last = t;
  }
  std::vector<std::int32_t> marks(ids.size(), kIgnoreTarget);
  marks[last] = 0;
  const auto model = model::make_causal_lm<float>(layout, 1, static_cast<int>(ids.size()));
  std::vector<float> params = loaded_.params;
  model::FlatUnitAccess access(layout, params.data(), nullptr);
  model->forward(access, ids.data(), marks.data());
  reward.value = model->losses()[last];
  return reward;
}

std::vector<TextPair> read_text_pairs(const std::filesystem::path& file,
                                      const std::string& chosen_column,
                                      const std::string& rejected_column) {
  std::ifstream in(file);
  AT_CHECK(in.good(), "score: cannot read ", file.string(), " (expected a JSONL file of pairs)");
  std::vector<TextPair> pairs;
  std::size_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = cat(file.string(), ":", line_number);
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& error) {
      throw Error(cat(where, ": not valid JSON (", error.what(), ")"));
    }
    AT_CHECK(row.is_object(), where, ": expected a JSON object with columns '", chosen_column,
             "' and '", rejected_column, "', got ", row.type_name());
    const auto text = [&](const std::string& column) {
      const auto found = row.find(column);
      if (found == row.end()) {
        std::string columns;
        for (const auto& [key, value] : row.items())
          columns += cat(columns.empty() ? "" : ", ", key);
        throw Error(cat(where, ": no column '", column, "' (the row has ", columns,
                        "); name it with --chosen-column / --rejected-column"));
      }
      AT_CHECK(found->is_string(), where, ": column '", column,
               "' should be a text (a string), got ", found->type_name());
      return found->get<std::string>();
    };
    pairs.push_back({text(chosen_column), text(rejected_column)});
  }
  AT_CHECK(!pairs.empty(), "score: ", file.string(), " holds no pairs");
  return pairs;
}

}  // namespace autotrain::train
