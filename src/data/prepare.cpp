// The prepare pipeline: read documents in order -> cut them into work units (pieces of about
// kUnitBytes at tokenization-safe positions) -> tokenize a batch of units on the thread pool
// -> write the batch's tokens in unit order into capped shards -> manifest.
// Units and batches are cut by size only, never by thread count, so the shards are identical
// for any number of threads.
#include "autotrain/data/prepare.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/data/chat_format.hpp"
#include "autotrain/data/loss_mask.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/text_input.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "manifest.hpp"
#include "progress.hpp"
#include "shard_sequence.hpp"
#include "worker_pool.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBatchBytes = 16 << 20;  // text tokenized between two writes

// `what` of an error in the unit at `source`, prefixed with the place unless it names it already
// (the chat formatter names the conversation itself).
std::string located(const std::string& source, const std::string& what) {
  return what.starts_with(source + ": ") ? what : cat(source, ": ", what);
}

struct WorkUnit {
  std::string text;
  TextPosition position = TextPosition::start;
  bool starts_document = false;
  bool after_document = false;                     // a document of this split precedes it
  std::string source;                              // file and document, for errors
  std::optional<nlohmann::ordered_json> messages;  // a conversation (chat_template), rendered
};

// First safe cut at or after `from` (after a newline, or with `spaces` also before a space:
// text_input.hpp), or text.size() when there is none.
size_t safe_cut_after(std::string_view text, size_t from, bool spaces) {
  for (size_t cut = std::max<size_t>(from, 1); cut + 1 < text.size(); ++cut) {
    if (is_safe_cut(text, cut) || (spaces && is_safe_space_cut(text, cut))) return cut;
  }
  return text.size();
}

// Cuts documents into work units, tokenizes a batch of units in parallel, writes their ids
// in order. Each document is framed by the tokenizer's special tokens: the prefix before it,
// the suffix after it (written when the next document starts, or at finish()).
class SplitTokenizer {
 public:
  SplitTokenizer(const Tokenizer& tokenizer, const ChatFormatter* chat,
                 const PrepareOptions& options, ShardSequence& output, PrepareProgress& progress,
                 uint64_t& bytes_done, uint64_t& tokens_done)
      : tokenizer_(tokenizer),
        chat_(chat),
        masked_(options.completions_only),
        frame_(tokenizer.document_frame(options.add_eos_token)),
        cuts_(tokenizer.cuts_at_newlines()),
        space_cuts_(cuts_ && tokenizer.cuts_at_spaces()),
        unit_bytes_(std::max<size_t>(options.unit_bytes, 1)),
        output_(output),
        progress_(progress),
        bytes_done_(bytes_done),
        tokens_done_(tokens_done),
        pool_(options.threads > 0
                  ? options.threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

  // Receives text from read_documents(): a document, or (starts_document false) the next
  // piece of the current one.
  void add(std::string&& text, bool starts_document, const std::string& source) {
    if (!cuts_) {
      // The tokenizer needs whole documents: hold the pieces until the document is complete.
      if (starts_document) take_held();
      if (held_.empty()) held_source_ = source;
      held_ += text;
      return;
    }
    add_units(text, starts_document, source);
  }

  // One conversation: one unit, rendered and tokenized on the pool.
  void add_conversation(nlohmann::ordered_json&& messages, const std::string& source,
                        size_t bytes) {
    WorkUnit unit;
    unit.messages = std::move(messages);
    unit.starts_document = true;
    unit.after_document = documents_ > 0;
    unit.source = source;
    ++documents_;
    units_.push_back(std::move(unit));
    pending_bytes_ += bytes;
    if (pending_bytes_ >= kBatchBytes) flush();
  }

  void flush() {
    take_held();
    if (units_.empty()) return;
    if (ids_.size() < units_.size()) ids_.resize(units_.size());
    if (flags_.size() < units_.size()) flags_.resize(units_.size());
    pool_.run(units_.size(), [&](size_t i) {
      try {
        tokenize_unit(units_[i], ids_[i], flags_[i]);
      } catch (const std::exception& error) {
        throw Error(located(units_[i].source, error.what()));
      }
    });

    for (size_t i = 0; i < units_.size(); ++i) {
      if (masked_ && units_[i].messages) {
        loss_counts_.add(std::count(flags_[i].begin(), flags_[i].end(), 1));
      }
      output_.append(ids_[i], flags_[i]);
      tokens_done_ += ids_[i].size();
    }
    bytes_done_ += pending_bytes_;
    progress_.update(bytes_done_, tokens_done_);
    units_.clear();
    pending_bytes_ = 0;
  }

  // With completions_only: how many tokens of the split's conversations carry loss.
  const LossCounts& loss_counts() const { return loss_counts_; }

  // The last document's suffix.
  void finish() {
    flush();
    if (documents_ > 0) {
      output_.append_unmasked(frame_.suffix);
      tokens_done_ += frame_.suffix.size();
    }
  }

 private:
  void take_held() {
    if (held_.empty()) return;
    std::string text = std::move(held_);
    held_.clear();
    add_units(text, true, held_source_);
  }

  void add_units(std::string_view rest, bool starts_document, const std::string& source) {
    bool first = true;
    if (starts_document) document_offset_ = 0;
    while (!rest.empty()) {
      const size_t cut = !cuts_ || rest.size() <= unit_bytes_
                             ? rest.size()
                             : safe_cut_after(rest, unit_bytes_, space_cuts_);
      WorkUnit unit{std::string(rest.substr(0, cut)),
                    first && starts_document ? TextPosition::start : TextPosition::continuation,
                    first && starts_document,
                    documents_ > 0,
                    document_offset_ == 0
                        ? source
                        : cat(source, " (the part from its byte ", document_offset_, ")"),
                    std::nullopt};
      document_offset_ += cut;
      if (unit.starts_document) ++documents_;
      units_.push_back(std::move(unit));
      pending_bytes_ += cut;
      rest.remove_prefix(cut);
      first = false;
      if (pending_bytes_ >= kBatchBytes) flush();
    }
  }

  // ids of the unit, and with masks its loss flags (the frame tokens carry none; a plain text
  // carries loss everywhere; a conversation where its segments say).
  void tokenize_unit(const WorkUnit& unit, std::vector<TokenId>& ids,
                     std::vector<uint8_t>& flags) const {
    ids.clear();
    flags.clear();
    if (unit.starts_document && unit.after_document)
      ids.insert(ids.end(), frame_.suffix.begin(), frame_.suffix.end());
    if (unit.messages) {
      // The template writes its own bos_token: no post-processor prefix (Hugging Face's
      // apply_chat_template tokenizes with add_special_tokens=False).
      if (masked_) flags.assign(ids.size(), 0);
      const auto segments = chat_->render(*unit.messages, masked_, unit.source);
      for (size_t s = 0; s < segments.size(); ++s) {
        tokenizer_.encode_append(segments[s].text, ids,
                                 s == 0 ? TextPosition::start : TextPosition::continuation);
        if (masked_) flags.resize(ids.size(), segments[s].carries_loss ? 1 : 0);
      }
      return;
    }
    if (unit.starts_document) ids.insert(ids.end(), frame_.prefix.begin(), frame_.prefix.end());
    if (masked_) flags.assign(ids.size(), 0);
    tokenizer_.encode_append(unit.text, ids, unit.position);
    if (masked_) flags.resize(ids.size(), 1);
  }

  const Tokenizer& tokenizer_;
  const ChatFormatter* chat_;  // null without chat_template
  bool masked_;
  DocumentFrame frame_;
  bool cuts_;
  bool space_cuts_;  // long lines are cut before spaces too
  size_t unit_bytes_;
  ShardSequence& output_;
  PrepareProgress& progress_;
  uint64_t& bytes_done_;
  uint64_t& tokens_done_;
  WorkerPool pool_;
  std::vector<WorkUnit> units_;
  size_t pending_bytes_ = 0;
  uint64_t documents_ = 0;
  uint64_t document_offset_ = 0;  // bytes of the current document before the next unit
  std::string held_;              // the document being collected when the tokenizer cannot cut
  std::string held_source_;
  std::vector<std::vector<TokenId>> ids_;    // per unit, reused across batches
  std::vector<std::vector<uint8_t>> flags_;  // per unit, with masks
  LossCounts loss_counts_;
};

// The formatter of options.chat_template, none without one.
std::optional<ChatFormatter> chat_formatter(const PrepareOptions& options,
                                            const Tokenizer& tokenizer) {
  AT_CHECK(!options.completions_only || !options.chat_template.empty(),
           "train_on_completions_only needs conversations: set chat_template (tokenizer, chatml "
           "or zephyr) and give text_column as lists of messages");
  if (options.chat_template.empty()) return std::nullopt;
  return ChatFormatter(options.chat_template, tokenizer);
}

uint64_t total_size(const std::vector<InputFile>& files) {
  uint64_t bytes = 0;
  for (const auto& file : files) bytes += fs::file_size(file.path);
  return bytes;
}

}  // namespace

TokenizerOptions tokenizer_options(const PrepareOptions& options) {
  return {options.gpt2_dir, options.parse_special_tokens};
}

const SplitShards* PrepareResult::find(const std::string& split) const {
  for (const auto& shards : splits)
    if (shards.split == split) return &shards;
  return nullptr;
}

// prepare() once the inputs are resolved and the tokenizer loaded (prepare_if_needed has done
// both to compute the key).
static PrepareResult prepare_resolved(const PrepareOptions& options, const ResolvedInputs& inputs,
                                      const std::unique_ptr<Tokenizer>& tokenizer,
                                      const nlohmann::json& key) {
  const Timer timer;
  AT_CHECK(options.shard_tokens > 0, "shard_tokens must be positive");
  AT_CHECK(!options.add_eos_token || tokenizer->eot_token() >= 0, "tokenizer ", tokenizer->name(),
           " has no end-of-text token (no eos_token in its tokenizer_config.json); set "
           "add_eos_token false");
  const int32_t version = shard_version_for(tokenizer->vocab_size());
  const std::optional<ChatFormatter> chat = chat_formatter(options, *tokenizer);

  fs::create_directories(options.output_dir);
  fs::remove(options.output_dir / kManifestName);  // an interrupted prepare is never reused
  remove_old_shards(options.output_dir, options.train_split);
  remove_old_shards(options.output_dir, options.valid_split);

  uint64_t total_bytes = total_size(inputs.train.files);
  if (inputs.valid) total_bytes += total_size(inputs.valid->files);
  PrepareProgress progress(options.show_progress, total_bytes);
  uint64_t bytes_done = 0;
  uint64_t tokens_done = 0;

  const auto tokenize_split = [&](const SplitInput& input) {
    ShardSequence output(options.output_dir, input.split, options.shard_tokens, version,
                         options.completions_only);
    SplitTokenizer split_tokenizer(*tokenizer, chat ? &*chat : nullptr, options, output, progress,
                                   bytes_done, tokens_done);
    for (const auto& file : input.files) {
      if (chat) {
        read_conversations(file, options.text_column,
                           [&](nlohmann::ordered_json&& messages, const std::string& where) {
                             const size_t bytes = messages.dump().size();
                             split_tokenizer.add_conversation(std::move(messages), where, bytes);
                           });
        continue;
      }
      uint64_t document = 0;
      read_documents(file, options.text_column, [&](std::string&& text, bool starts_document) {
        if (starts_document) ++document;
        split_tokenizer.add(std::move(text), starts_document,
                            cat(file.path.string(), ", document ", document));
      });
    }
    split_tokenizer.finish();
    if (chat && options.completions_only) {
      std::vector<std::string> files;
      for (const auto& file : input.files) files.push_back(file.path.string());
      check_loss_counts(split_tokenizer.loss_counts(), input.split, join(files, ", "));
    }
    return output.finish();
  };

  PrepareResult result;
  result.output_dir = options.output_dir;
  result.tokenizer = tokenizer->name();
  result.vocab_size = tokenizer->vocab_size();
  result.eot_token = tokenizer->eot_token();
  SplitShards train = tokenize_split(inputs.train);
  AT_CHECK(train.tokens > 0, "split '", options.train_split, "' of ", options.data_path.string(),
           " holds no text (every document is empty)");
  std::optional<SplitShards> valid;
  if (inputs.valid) {
    valid = tokenize_split(*inputs.valid);
  } else if (inputs.valid_fraction > 0) {
    const auto count =
        static_cast<uint64_t>(static_cast<double>(train.tokens) * inputs.valid_fraction);
    AT_CHECK(count > 0 && count < train.tokens, "valid_fraction ", inputs.valid_fraction, " of ",
             train.tokens, " train tokens leaves ", count,
             " validation tokens; use a fraction in (0, 1) that leaves both splits non-empty");
    valid = carve_tail(train, options.valid_split, count, options.output_dir, options.shard_tokens,
                       version, options.completions_only);
  }
  result.splits.push_back(std::move(train));
  if (valid) result.splits.push_back(std::move(*valid));
  result.seconds = timer.seconds();
  result.tokens_per_second = static_cast<double>(tokens_done) / std::max(result.seconds, 1e-9);
  write_manifest(options, key, result);

  progress.finish();
  std::vector<std::string> counts;
  for (const auto& split : result.splits) counts.push_back(cat(split.split, " ", split.tokens));
  log::info("prepared ", tokens_done, " tokens (", join(counts, ", "), ") into ",
            options.output_dir.string(), " in ", result.seconds,
            " s: ", static_cast<uint64_t>(result.tokens_per_second), " tokens/s, ",
            std::round(static_cast<double>(bytes_done) / std::max(result.seconds, 1e-9) / 1e5) / 10,
            " MB/s of text");
  return result;
}

PrepareResult prepare(const PrepareOptions& options) {
  const ResolvedInputs inputs = resolve_inputs(options);
  const auto tokenizer = make_tokenizer(options.tokenizer, tokenizer_options(options));
  return prepare_resolved(options, inputs, tokenizer, manifest_key(options, inputs, *tokenizer));
}

bool is_prepared_folder(const fs::path& data_path) {
  std::error_code error;
  return fs::is_directory(data_path, error) && fs::exists(data_path / kManifestName, error);
}

// `prepare`'s output given as data_path: used as it is, if it was made with this tokenizer.
static PrepareResult use_prepared_folder(const PrepareOptions& options) {
  PrepareResult result = read_manifest(options.data_path);
  const auto tokenizer = make_tokenizer(options.tokenizer, tokenizer_options(options));
  const nlohmann::json recorded =
      read_manifest_key(options.data_path).value("tokenizer", nlohmann::json());
  const bool same =
      recorded.value("name", "") == tokenizer->name() &&
      recorded.value("vocabulary_hash", "") == hash_files(tokenizer->vocabulary_files()) &&
      recorded.value("parse_special_tokens", true) == options.parse_special_tokens;
  AT_CHECK(same, options.data_path.string(), " was prepared with the tokenizer ",
           recorded.value("name", "(unknown)"), ", but this run's is ", tokenizer->name(),
           " (or its files or parse_special_tokens differ): give this run's tokenizer, or "
           "prepare the data again");
  result.reused = true;
  return result;
}

PrepareResult prepare_if_needed(const PrepareOptions& options) {
  if (is_prepared_folder(options.data_path)) return use_prepared_folder(options);
  const ResolvedInputs inputs = resolve_inputs(options);
  const auto tokenizer = make_tokenizer(options.tokenizer, tokenizer_options(options));
  const nlohmann::json key = manifest_key(options, inputs, *tokenizer);
  if (auto reused = reusable_manifest(options, key)) {
    log::info("reusing prepared data in ", options.output_dir.string(), " (inputs unchanged)");
    return *reused;
  }
  return prepare_resolved(options, inputs, tokenizer, key);
}

namespace {

// Reads `file` up to its first document: the csv header or the jsonl line that lacks
// text_column fails as it would during tokenizing.
void check_first_document(const InputFile& file, const PrepareOptions& options) {
  struct Enough {};
  try {
    if (options.chat_template.empty()) {
      read_documents(file, options.text_column, [](std::string&&, bool) { throw Enough{}; });
    } else {
      read_conversations(file, options.text_column,
                         [](nlohmann::ordered_json&&, const std::string&) { throw Enough{}; });
    }
  } catch (const Enough&) {
  }
}

}  // namespace

InputsCheck check_inputs(const PrepareOptions& options) {
  if (is_prepared_folder(options.data_path)) {
    const PrepareResult prepared = use_prepared_folder(options);
    std::vector<std::string> splits;
    for (const auto& split : prepared.splits) splits.push_back(cat(split.split, " ", split.tokens));
    return {cat("the prepared shards in ", options.data_path.string(), " (", join(splits, ", "),
                " tokens)"),
            prepared.vocab_size};
  }
  const ResolvedInputs inputs = resolve_inputs(options);
  for (const auto& file : inputs.train.files) check_first_document(file, options);
  std::string valid = "no valid split";
  if (inputs.valid) {
    for (const auto& file : inputs.valid->files) check_first_document(file, options);
    valid = describe_split(*inputs.valid);
  } else if (inputs.valid_fraction > 0) {
    valid = cat(options.valid_split, " carved from the last ", inputs.valid_fraction * 100, "% of ",
                options.train_split);
  }
  const auto tokenizer = make_tokenizer(options.tokenizer, tokenizer_options(options));
  const auto chat = chat_formatter(options, *tokenizer);
  const bool reused =
      reusable_manifest(options, manifest_key(options, inputs, *tokenizer)).has_value();
  return {
      cat(describe_split(inputs.train), "; ", valid, "; ",
          chat ? cat("conversations rendered by ", chat->origin(),
                     options.completions_only ? ", loss on the assistant turns only; " : "; ")
               : std::string(),
          reused ? "reusing the shards in " : "to be tokenized into ", options.output_dir.string()),
      tokenizer->vocab_size()};
}

PrepareResult prepare_if_needed_collective(const PrepareOptions& options, MPI_Comm comm) {
  stop_here_if_asked("prepare");
  std::string failure;
  run_on_root(comm, "data preparation (rank 0 tokenizes data_path)", [&] {
    try {
      prepare_if_needed(options);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  });
  agree_or_throw(failure.empty(), failure, comm, "the prepared data");
  return read_manifest(is_prepared_folder(options.data_path) ? options.data_path
                                                             : options.output_dir);
}

}  // namespace autotrain::data
