// `autotrain prepare`: tokenizes a data_path (AutoTrain layouts) into llm.c-format token shards
// plus manifest.json (docs/data.md). Under mpirun only rank 0 works; the others wait for it and
// share its outcome.
#include "autotrain/data/prepare.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/config/base_model.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/tokenizer.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;

struct Flag {
  const char* name;
  const char* value;
  const char* help;
};

constexpr Flag kFlags[] = {
    {"data-path", "DIR|FILE|ID",
     "folder with {split}.csv/.jsonl/.txt or Parquet files, one\n"
     "                              .txt/.csv/.jsonl/.parquet file, or a Hub dataset id "
     "(org/name)\n"
     "                              in the offline Hugging Face cache"},
    {"output", "DIR", "where the shards and manifest.json are written"},
    {"tokenizer", "NAME|PATH", "gpt2 (default), byte, a tokenizer.json or a model folder"},
    {"parse-special-tokens", "BOOL",
     "special tokens written in the text become their ids (default\n"
     "                              true, as Hugging Face; false = ordinary text)"},
    {"train-split", "NAME", "train split name (default train)"},
    {"valid-split", "NAME", "validation split name (default valid; 'none' for no validation)"},
    {"text-column", "NAME", "CSV/JSONL/Parquet column holding the text (default text)"},
    {"chat-template", "NAME",
     "none (default), tokenizer, chatml or zephyr: text-column\n"
     "                              holds conversations (lists of messages) to render"},
    {"train-on-completions-only", "BOOL",
     "with --chat-template: only the assistant turns carry\n"
     "                              loss (loss masks beside the shards; default false)"},
    {"add-eos-token", "BOOL",
     "end-of-text token between documents (default true; before\n"
     "                              each for gpt2/byte, after each for tokenizer.json)"},
    {"threads", "N", "tokenizer threads (default: all cores)"},
    {"valid-fraction", "F",
     "without a valid split file, move the last F of the train\n"
     "                              tokens to the valid split (default 0.1 for a single-file\n"
     "                              data_path, else 0)"},
    {"shard-tokens", "N", "tokens per shard file at most (default 100000000)"},
};

std::string help_text() {
  std::string out =
      "usage: autotrain prepare --data-path DIR|FILE|ID --output DIR [options]\n\n"
      "Tokenizes text into token shards in llm.c's format (docs/data.md). Runs on rank 0\n"
      "when started under mpirun; the other ranks wait.\n\noptions:\n";
  for (const auto& flag : kFlags) {
    const std::string left = cat("  --", flag.name, " ", flag.value);
    out += left + std::string(left.size() < 30 ? 30 - left.size() : 1, ' ') + flag.help + "\n";
  }
  out += "  --help                      print this help\n";
  return out;
}

bool parse_bool(const std::string& flag, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no") return false;
  throw CollectiveError(cat("prepare: --", flag, " expects true or false, got '", text, "'"));
}

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    T value{};
    if constexpr (std::is_floating_point_v<T>) {
      value = static_cast<T>(std::stod(text, &used));
    } else {
      value = static_cast<T>(std::stoll(text, &used));
    }
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw CollectiveError(cat("prepare: --", flag, " expects a number, got '", text, "'"));
}

// Returns nothing when --help was asked for.
std::optional<data::PrepareOptions> parse(const std::vector<std::string>& args) {
  po::options_description description;
  for (const auto& flag : kFlags) {
    description.add_options()(flag.name, po::value<std::string>(), "");
    const std::string snake = to_snake_case(flag.name);
    if (snake != flag.name) description.add_options()(snake.c_str(), po::value<std::string>(), "");
  }
  description.add_options()("help,h", "");
  const po::variables_map values = parse_command_options("prepare", description, args);
  if (values.count("help")) return std::nullopt;

  const auto get = [&](const char* name) -> std::optional<std::string> {
    const std::string snake = to_snake_case(name);
    const bool kebab = values.count(name) > 0;
    if (kebab && values.count(snake) && snake != name)
      throw CollectiveError(cat("prepare: --", name, " is given twice; give it once"));
    if (kebab) return values[name].as<std::string>();
    if (values.count(snake)) return values[snake].as<std::string>();
    return std::nullopt;
  };
  data::PrepareOptions options;
  const auto data_path = get("data-path");
  const auto output = get("output");
  if (!data_path || !output)
    throw CollectiveError(
        "prepare: --data-path and --output are required; see autotrain prepare --help");
  options.data_path = config::locate_dataset(*data_path);
  options.output_dir = *output;
  if (auto value = get("tokenizer")) options.tokenizer = *value;
  if (auto value = get("parse-special-tokens"))
    options.parse_special_tokens = parse_bool("parse-special-tokens", *value);
  if (auto value = get("train-split")) options.train_split = *value;
  if (auto value = get("valid-split")) {
    options.valid_split = *value == "none" ? "" : *value;
    options.require_valid_split = !options.valid_split.empty();
  }
  if (auto value = get("text-column")) options.text_column = *value;
  if (auto value = get("chat-template")) {
    static const std::vector<std::string> kTemplates = {"none", "tokenizer", "chatml", "zephyr"};
    if (std::find(kTemplates.begin(), kTemplates.end(), *value) == kTemplates.end())
      throw CollectiveError(cat("prepare: --chat-template expects ", join(kTemplates, ", "),
                                ", got '", *value, "'", did_you_mean(*value, kTemplates)));
    options.chat_template = *value == "none" ? "" : *value;
  }
  if (auto value = get("train-on-completions-only"))
    options.completions_only = parse_bool("train-on-completions-only", *value);
  if (auto value = get("add-eos-token"))
    options.add_eos_token = parse_bool("add-eos-token", *value);
  if (auto value = get("threads")) {
    options.threads = parse_number<int>("threads", *value);
    if (options.threads < 1)
      throw CollectiveError(cat("prepare: --threads must be at least 1, got ", *value));
  }
  if (auto value = get("valid-fraction"))
    options.valid_fraction = parse_number<double>("valid-fraction", *value);
  if (auto value = get("shard-tokens")) {
    const auto tokens = parse_number<int64_t>("shard-tokens", *value);
    if (tokens < 1 || tokens > INT32_MAX)
      throw CollectiveError(
          cat("prepare: --shard-tokens must be in [1, ", INT32_MAX, "], got ", *value));
    options.shard_tokens = static_cast<uint64_t>(tokens);
  }
  return options;
}

}  // namespace

int run_prepare(const std::vector<std::string>& args, MpiSession& mpi) {
  const auto options = parse(args);
  if (!options) {
    if (mpi.rank() == 0) std::cout << help_text();
    return 0;
  }
  std::string failure;
  if (mpi.rank() == 0) {
    try {
      const auto result = data::prepare(*options);
      for (const auto& split : result.splits) {
        std::cout << split.split << ": " << split.tokens << " tokens in " << split.shards.size()
                  << " shard" << (split.shards.size() == 1 ? "" : "s") << " ("
                  << split.shards.front().filename().string()
                  << (split.shards.size() > 1 ? " ..." : "") << ")\n";
      }
      std::cout << "tokens/s: " << static_cast<uint64_t>(result.tokens_per_second) << " ("
                << result.tokenizer << ", " << result.seconds << " s)\n";
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure);
  return 0;
}

}  // namespace autotrain::cli
