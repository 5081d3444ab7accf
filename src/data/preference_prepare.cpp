// Preparing preference pairs: read rows in order -> render and tokenize a batch of them on the
// thread pool -> write the kept pairs in row order (PairWriter) -> the pair index and pairs.json.
// Batches are cut by row count only, so the files are identical for any number of threads.
#include <algorithm>
#include <thread>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/chat_format.hpp"
#include "autotrain/data/preference.hpp"
#include "pair_files.hpp"
#include "preference_manifest.hpp"
#include "preference_rows.hpp"
#include "worker_pool.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBatchRows = 4096;  // rows tokenized between two writes

std::optional<ChatFormatter> chat_formatter(const PreferenceOptions& options,
                                            const Tokenizer& tokenizer) {
  if (options.prepare.chat_template.empty()) return std::nullopt;
  return ChatFormatter(options.prepare.chat_template, tokenizer);
}

// The pad token: the tokenizer's, else EOS (as AutoTrain and TRL set pad = eos).
TokenId pad_token_of(const Tokenizer& tokenizer) {
  const TokenId pad = tokenizer.pad_token().value_or(tokenizer.eot_token());
  AT_CHECK(pad >= 0, "tokenizer ", tokenizer.name(),
           " has neither a pad_token nor an eos_token (tokenizer_config.json): preference rows "
           "are padded with one");
  return pad;
}

// Tokenizes the rows of one split in batches and writes the kept pairs in order.
class SplitPairs {
 public:
  SplitPairs(const Tokenizer& tokenizer, const ChatFormatter* chat,
             const PreferenceOptions& options, PairWriter& writer, WorkerPool& pool)
      : tokenizer_(tokenizer), chat_(chat), options_(options), writer_(writer), pool_(pool) {}

  void add(PairRow&& row) {
    rows_.push_back(std::move(row));
    if (rows_.size() == kBatchRows) flush();
  }

  void flush() {
    tokens_.resize(rows_.size());
    pool_.run(rows_.size(), [&](size_t i) {
      const std::string where = rows_[i].where;
      try {
        tokens_[i] =
            tokenize_pair(pair_text(std::move(rows_[i]), chat_, options_), tokenizer_, options_);
      } catch (const std::exception& error) {
        const std::string what = error.what();
        throw Error(what.starts_with(where) ? what : cat(where, ": ", what));
      }
    });
    for (const PairTokens& pair : tokens_) {
      if (pair.dropped) {
        ++dropped_;
      } else {
        writer_.append(pair);
      }
    }
    rows_.clear();
  }

  uint64_t dropped() const { return dropped_; }

 private:
  const Tokenizer& tokenizer_;
  const ChatFormatter* chat_;
  const PreferenceOptions& options_;
  PairWriter& writer_;
  WorkerPool& pool_;
  std::vector<PairRow> rows_;
  std::vector<PairTokens> tokens_;
  uint64_t dropped_ = 0;
};

// One split's pairs as written, and how many were dropped.
struct SplitResult {
  WrittenPairs written;
  uint64_t dropped = 0;
};

// Why pairs are dropped, for the messages.
std::string drop_reason(const PreferenceOptions& options) {
  return options.reward ? cat("chosen or rejected is longer than max_length (block_size) ",
                              options.max_length, " tokens")
                        : cat("the prompt fills max_length (block_size) ", options.max_length,
                              " tokens; lower max_prompt_length");
}

// One split's pairs from its files.
SplitResult tokenize_split(const SplitInput& input, const Tokenizer& tokenizer,
                           const ChatFormatter* chat, const PreferenceOptions& options,
                           WorkerPool& pool) {
  PairWriter writer(options.prepare.output_dir, input.split, options.prepare.shard_tokens,
                    shard_version_for(tokenizer.vocab_size()));
  SplitPairs pairs(tokenizer, chat, options, writer, pool);
  for (const auto& file : input.files)
    read_pair_rows(file, options, [&](PairRow&& row) { pairs.add(std::move(row)); });
  pairs.flush();
  SplitResult result{writer.finish(), pairs.dropped()};
  if (result.dropped > 0) {
    log::warn("dropped ", result.dropped, " of the ", result.written.pairs() + result.dropped,
              " pairs of split '", input.split, "': ", drop_reason(options));
  }
  AT_CHECK(result.written.pairs() > 0, "split '", input.split, "' of ",
           options.prepare.data_path.string(), " holds no preference pairs",
           result.dropped > 0
               ? cat(": all ", result.dropped, " were dropped because ", drop_reason(options))
               : std::string());
  return result;
}

// The last valid_fraction of train's pairs as the valid split.
SplitResult carve_valid(SplitResult& train, double fraction, const PreferenceOptions& options,
                        int32_t version) {
  const uint64_t pairs = train.written.pairs();
  const auto count = static_cast<uint64_t>(static_cast<double>(pairs) * fraction);
  AT_CHECK(count > 0 && count < pairs, "valid_fraction ", fraction, " of ", pairs,
           " train pairs leaves ", count,
           " validation pairs; use a fraction in (0, 1) that leaves both splits non-empty");
  return {carve_pairs(train.written, options.prepare.valid_split, count, options.prepare.output_dir,
                      options.prepare.shard_tokens, version),
          0};
}

PairSplit finish_split(const SplitResult& result, const std::string& split,
                       const PairIndexInfo& info, const PreferenceOptions& options) {
  PairSplit out =
      result.written.describe(split, pair_index_path(options.prepare.output_dir, split));
  out.pairs_dropped = result.dropped;
  write_pair_index(out.index, result.written, info);
  return out;
}

void log_prepared(const PreparedPairs& prepared) {
  std::vector<std::string> splits;
  for (const auto& split : prepared.splits) {
    splits.push_back(cat(split.split, " ", split.pairs, " pairs (", split.prompts_truncated,
                         " prompts and ", split.completions_truncated, " completions truncated, ",
                         split.pairs_dropped, " pairs dropped)"));
  }
  log::info("prepared preference pairs into ", prepared.output_dir.string(), ": ",
            join(splits, "; "));
}

PreparedPairs prepare_resolved(const PreferenceOptions& options, const ResolvedInputs& inputs,
                               const Tokenizer& tokenizer, const nlohmann::json& key) {
  const PrepareOptions& prepare = options.prepare;
  AT_CHECK(prepare.shard_tokens > 0, "shard_tokens must be positive");
  const std::optional<ChatFormatter> chat = chat_formatter(options, tokenizer);
  const PairIndexInfo info{tokenizer.eot_token(), pad_token_of(tokenizer), options.reward};
  const int32_t version = shard_version_for(tokenizer.vocab_size());
  fs::create_directories(prepare.output_dir);
  fs::remove(prepare.output_dir / kPairsManifestName);  // an interrupted prepare is never reused
  remove_old_pair_files(prepare.output_dir, prepare.train_split);
  remove_old_pair_files(prepare.output_dir, prepare.valid_split);

  WorkerPool pool(prepare.threads > 0
                      ? prepare.threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const ChatFormatter* formatter = chat ? &*chat : nullptr;
  SplitResult train = tokenize_split(inputs.train, tokenizer, formatter, options, pool);
  std::optional<SplitResult> valid;
  if (inputs.valid) {
    valid = tokenize_split(*inputs.valid, tokenizer, formatter, options, pool);
  } else if (inputs.valid_fraction > 0) {
    valid = carve_valid(train, inputs.valid_fraction, options, version);
  }

  PreparedPairs prepared;
  prepared.output_dir = prepare.output_dir;
  prepared.tokenizer = tokenizer.name();
  prepared.vocab_size = tokenizer.vocab_size();
  prepared.eos_token = info.eos;
  prepared.pad_token = info.pad;
  prepared.splits.push_back(finish_split(train, prepare.train_split, info, options));
  if (valid) prepared.splits.push_back(finish_split(*valid, prepare.valid_split, info, options));
  write_pairs_manifest(options, key, prepared);
  log_prepared(prepared);
  return prepared;
}

}  // namespace

const PairSplit* PreparedPairs::find(const std::string& split) const {
  for (const auto& pairs : splits)
    if (pairs.split == split) return &pairs;
  return nullptr;
}

PreparedPairs prepare_pairs(const PreferenceOptions& options) {
  const ResolvedInputs inputs = resolve_inputs(options.prepare);
  const auto tokenizer =
      make_tokenizer(options.prepare.tokenizer, tokenizer_options(options.prepare));
  return prepare_resolved(options, inputs, *tokenizer,
                          pairs_manifest_key(options, inputs, *tokenizer));
}

PreparedPairs prepare_pairs_if_needed(const PreferenceOptions& options) {
  const ResolvedInputs inputs = resolve_inputs(options.prepare);
  const auto tokenizer =
      make_tokenizer(options.prepare.tokenizer, tokenizer_options(options.prepare));
  const nlohmann::json key = pairs_manifest_key(options, inputs, *tokenizer);
  if (auto reused = reusable_pairs(options, key)) {
    log::info("reusing the preference pairs in ", options.prepare.output_dir.string(),
              " (inputs unchanged)");
    return *reused;
  }
  return prepare_resolved(options, inputs, *tokenizer, key);
}

PreparedPairs prepare_pairs_if_needed_collective(const PreferenceOptions& options, MPI_Comm comm) {
  stop_here_if_asked("prepare");
  std::string failure;
  int reused = 0;
  run_on_root(comm, "preference data preparation (rank 0 tokenizes data_path)", [&] {
    try {
      reused = prepare_pairs_if_needed(options).reused ? 1 : 0;
    } catch (const std::exception& error) {
      failure = error.what();
    }
  });
  agree_or_throw(failure.empty(), failure, comm, "the prepared preference pairs");
  broadcast_or_abort(&reused, 1, MPI_INT, 0, comm, "whether the preference pairs were reused");
  PreparedPairs prepared = read_pairs_manifest(options.prepare.output_dir);
  prepared.reused = reused != 0;
  return prepared;
}

namespace {

// Reads `file` up to its first row, which must have the pair's columns as tokenizing needs them.
void check_first_row(const InputFile& file, const PreferenceOptions& options,
                     const ChatFormatter* chat) {
  struct Enough {};
  try {
    read_pair_rows(file, options, [&](PairRow&& row) {
      const std::string where = row.where;
      try {
        pair_text(std::move(row), chat, options);
      } catch (const std::exception& error) {
        const std::string what = error.what();
        throw Error(what.starts_with(where) ? what : cat(where, ": ", what));
      }
      throw Enough{};
    });
  } catch (const Enough&) {
  }
}

}  // namespace

PairsCheck check_pair_inputs(const PreferenceOptions& options) {
  const PrepareOptions& prepare = options.prepare;
  const ResolvedInputs inputs = resolve_inputs(prepare);
  const auto tokenizer = make_tokenizer(prepare.tokenizer, tokenizer_options(prepare));
  const std::optional<ChatFormatter> chat = chat_formatter(options, *tokenizer);
  const ChatFormatter* formatter = chat ? &*chat : nullptr;
  pad_token_of(*tokenizer);
  for (const auto& file : inputs.train.files) check_first_row(file, options, formatter);
  std::string valid = "no valid split";
  if (inputs.valid) {
    for (const auto& file : inputs.valid->files) check_first_row(file, options, formatter);
    valid = describe_split(*inputs.valid);
  } else if (inputs.valid_fraction > 0) {
    valid = cat(prepare.valid_split, " carved from the last ", inputs.valid_fraction * 100, "% of ",
                prepare.train_split, "'s pairs");
  }
  const bool reused =
      reusable_pairs(options, pairs_manifest_key(options, inputs, *tokenizer)).has_value();
  return {
      cat(options.reward ? "reward pairs (chosen '" : "preference pairs (prompt '",
          options.reward ? "" : cat(options.prompt_column, "', chosen '"), prepare.text_column,
          "', rejected '", options.rejected_column, "'): ", describe_split(inputs.train), "; ",
          valid, "; ",
          chat ? cat("conversations rendered by ", chat->origin(), "; ") : std::string(),
          reused ? "reusing the pairs in " : "to be tokenized into ", prepare.output_dir.string()),
      tokenizer->vocab_size()};
}

}  // namespace autotrain::data
