#pragma once
// The rows of preference data (docs/data.md, "Preference data"): the prompt, chosen and rejected
// columns of a CSV or JSONL file, as plain text or, with chat_template, conversations rendered
// as AutoTrain renders them for its dpo, orpo and reward trainers.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/data/chat_format.hpp"
#include "autotrain/data/preference.hpp"
#include "autotrain/data/text_input.hpp"

namespace autotrain::data {

// One row as read: prompt (null in reward mode, or when a chat row has no prompt column),
// chosen and rejected, and where it is ("file:line").
struct PairRow {
  nlohmann::ordered_json prompt, chosen, rejected;
  std::string where;
};

// Calls `sink` with every row of `file` that is not blank (all its columns empty or null).
// A missing column is an Error naming the file (and line), the column and its parameter.
void read_pair_rows(const InputFile& file, const PreferenceOptions& options,
                    const std::function<void(PairRow&&)>& sink);

// The texts of a row: its strings, or with `chat` its conversations rendered (AutoTrain's
// apply_chat_template for dpo/orpo: prompt = every message of chosen but the last, chosen and
// rejected = their last message each, every part rendered on its own without a generation
// prompt; for reward: chosen and rejected rendered whole; with zephyr an empty system message
// first where the conversation has none). A value of the wrong kind is an Error naming the row
// and the column.
PairText pair_text(PairRow&& row, const ChatFormatter* chat, const PreferenceOptions& options);

}  // namespace autotrain::data
