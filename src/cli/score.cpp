// `autotrain score`: the rewards a reward model's folder (a score head, as trainer: reward exports
// it) gives texts, or the pairs of a JSONL file with the share it ranks right (train/score.hpp).
// Runs without MPI, on the CPU.
#include "autotrain/train/score.hpp"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::cli {
namespace {

// A text on one line of the output: newlines shown as \n, at most 60 characters.
std::string excerpt(const std::string& text) {
  std::string line;
  for (const char ch : text) line += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  return line.size() <= 60 ? line : line.substr(0, 57) + "...";
}

std::string reward_text(const train::Reward& reward) {
  char value[32];
  std::snprintf(value, sizeof value, "%.6f", reward.value);
  return cat(value, " (", reward.tokens, " tokens", reward.truncated ? ", truncated" : "", ")");
}

void score_pairs(const train::RewardScorer& scorer, const std::vector<train::TextPair>& pairs) {
  std::size_t right = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const train::Reward chosen = scorer.score(pairs[i].chosen);
    const train::Reward rejected = scorer.score(pairs[i].rejected);
    const bool ranked_right = chosen.value > rejected.value;
    right += ranked_right ? 1 : 0;
    const char* note = ranked_right                     ? ""
                       : chosen.value == rejected.value ? "  <- a tie"
                                                        : "  <- rejected scored higher";
    std::cout << "pair " << i + 1 << ": chosen " << reward_text(chosen) << ", rejected "
              << reward_text(rejected) << note << "\n";
  }
  char share[32];
  std::snprintf(share, sizeof share, "%.4f", double(right) / double(pairs.size()));
  std::cout << "accuracy " << share << " (" << right << " of " << pairs.size()
            << " pairs with chosen above rejected)\n";
}

}  // namespace

int run_score(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  std::string model_dir, pairs_file, chosen_column = "chosen", rejected_column = "rejected";
  std::vector<std::string> texts;
  po::options_description description(
      "autotrain score --model FOLDER (--text TEXT ... | --pairs FILE.jsonl)");
  description.add_options()  //
      ("model", po::value(&model_dir)->value_name("FOLDER"),
       "a reward model's folder (*ForSequenceClassification with one label, as trainer: reward "
       "exports it)")  //
      ("text", po::value(&texts)->value_name("TEXT")->multitoken(),
       "texts to score (the flag repeated, or several after it)")  //
      ("pairs", po::value(&pairs_file)->value_name("FILE.jsonl"),
       "preference pairs, one JSON object per line: prints each pair's two rewards and the "
       "accuracy (the share of pairs whose chosen text scores above the rejected one)")  //
      ("chosen-column", po::value(&chosen_column)->value_name("NAME"),
       "--pairs' column of the chosen text (default chosen)")  //
      ("rejected-column", po::value(&rejected_column)->value_name("NAME"),
       "--pairs' column of the rejected text (default rejected)")  //
      ("help,h", "show this help");
  const auto values = parse_command_options("score", description, args);
  if (values.count("help")) {
    std::cout << description << "\n"
              << "Each text is tokenized with the folder's tokenizer and its special tokens, cut "
                 "to the model's positions, and scored at its last token that is not the pad "
                 "token, as transformers' sequence classifiers score it.\n";
    return 0;
  }
  if (model_dir.empty()) {
    throw UsageError("score: --model FOLDER is required; see autotrain score --help");
  }
  if (texts.empty() == pairs_file.empty()) {
    throw UsageError(
        "score: give --text TEXT ... or --pairs FILE.jsonl (one of them); see autotrain score "
        "--help");
  }
  const train::RewardScorer scorer(model_dir);
  std::cerr << "score: " << model_dir << " on the CPU\n" << std::flush;
  if (!pairs_file.empty()) {
    score_pairs(scorer, train::read_text_pairs(pairs_file, chosen_column, rejected_column));
    return 0;
  }
  for (const std::string& text : texts) {
    std::cout << reward_text(scorer.score(text)) << "  " << excerpt(text) << "\n";
  }
  return 0;
}

}  // namespace autotrain::cli
