// The prepare pipeline: read documents in order -> cut them into work units (pieces of about
// kUnitBytes at tokenization-safe positions) -> tokenize a batch of units on the thread pool
// -> write the batch's tokens in unit order into capped shards -> manifest.
// Units and batches are cut by size only, never by thread count, so the shards are identical
// for any number of threads.
#include "autotrain/data/prepare.hpp"

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/text_input.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "manifest.hpp"
#include "progress.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr size_t kUnitBytes = 256 << 10;  // text per work unit
constexpr size_t kBatchBytes = 16 << 20;  // text tokenized between two writes

struct WorkUnit {
  std::string text;
  bool starts_document = false;
};

// Writes the tokens of one split into <dir>/<split>_NNNNNN.bin, starting a new shard every
// `cap` tokens.
class ShardSequence {
 public:
  ShardSequence(fs::path dir, std::string split, uint64_t cap)
      : dir_(std::move(dir)), split_(std::move(split)), cap_(cap) {}

  void append(std::span<const uint16_t> tokens) {
    while (!tokens.empty()) {
      if (!writer_ || writer_->tokens() == cap_) open_next();
      const size_t take = std::min<uint64_t>(tokens.size(), cap_ - writer_->tokens());
      writer_->append(tokens.first(take));
      tokens = tokens.subspan(take);
      total_ += take;
    }
  }

  SplitShards finish() {
    if (!writer_) open_next();  // an empty split still gets one (empty) shard
    writer_->close();
    return {split_, paths_, total_};
  }

 private:
  void open_next() {
    if (writer_) writer_->close();
    paths_.push_back(shard_path(dir_, split_, paths_.size()));
    writer_ = std::make_unique<ShardWriter>(paths_.back());
  }

  fs::path dir_;
  std::string split_;
  uint64_t cap_;
  std::unique_ptr<ShardWriter> writer_;
  std::vector<fs::path> paths_;
  uint64_t total_ = 0;
};

// First safe cut at or after `from` (see safe_cut_before), or text.size() when there is none.
size_t safe_cut_after(std::string_view text, size_t from) {
  for (size_t cut = std::max<size_t>(from, 2); cut + 1 < text.size(); ++cut) {
    if (safe_cut_before(text, cut) == cut) return cut;
  }
  return text.size();
}

class SplitTokenizer {
 public:
  SplitTokenizer(const Tokenizer& tokenizer, const PrepareOptions& options, ShardSequence& output,
                 PrepareProgress& progress, uint64_t& bytes_done, uint64_t& tokens_done)
      : tokenizer_(tokenizer),
        options_(options),
        output_(output),
        progress_(progress),
        bytes_done_(bytes_done),
        tokens_done_(tokens_done) {
    threads_ = options.threads > 0
                   ? options.threads
                   : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  // Receives text from read_documents().
  void add(std::string&& text, bool starts_document) {
    std::string_view rest = text;
    bool first = true;
    while (!rest.empty()) {
      const size_t cut = rest.size() <= kUnitBytes ? rest.size() : safe_cut_after(rest, kUnitBytes);
      units_.push_back({std::string(rest.substr(0, cut)), first && starts_document});
      pending_bytes_ += cut;
      rest.remove_prefix(cut);
      first = false;
      if (pending_bytes_ >= kBatchBytes) flush();
    }
  }

  void flush() {
    if (units_.empty()) return;
    if (ids_.size() < units_.size()) ids_.resize(units_.size());
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    const auto work = [&] {
      for (size_t i = next++; i < units_.size(); i = next++) {
        try {
          ids_[i].clear();
          if (units_[i].starts_document && options_.add_eos_token)
            ids_[i].push_back(tokenizer_.eot_token());
          tokenizer_.encode_append(units_[i].text, ids_[i]);
        } catch (...) {
          const std::lock_guard lock(failure_mutex);
          if (!failure) failure = std::current_exception();
        }
      }
    };
    const int workers = std::min<int>(threads_, static_cast<int>(units_.size()));
    std::vector<std::thread> pool;
    for (int t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
    for (auto& thread : pool) thread.join();
    if (failure) std::rethrow_exception(failure);

    for (size_t i = 0; i < units_.size(); ++i) {
      tokens16_.resize(ids_[i].size());
      for (size_t j = 0; j < ids_[i].size(); ++j) tokens16_[j] = static_cast<uint16_t>(ids_[i][j]);
      output_.append(tokens16_);
      tokens_done_ += ids_[i].size();
    }
    bytes_done_ += pending_bytes_;
    progress_.update(bytes_done_, tokens_done_);
    units_.clear();
    pending_bytes_ = 0;
  }

 private:
  const Tokenizer& tokenizer_;
  const PrepareOptions& options_;
  ShardSequence& output_;
  PrepareProgress& progress_;
  uint64_t& bytes_done_;
  uint64_t& tokens_done_;
  int threads_ = 1;
  std::vector<WorkUnit> units_;
  size_t pending_bytes_ = 0;
  std::vector<std::vector<TokenId>> ids_;  // per unit, reused across batches
  std::vector<uint16_t> tokens16_;
};

// Moves the last `count` tokens of `train` into a new split `valid_split` (one or more
// shards), truncating or removing train shards.
SplitShards carve_tail(SplitShards& train, const std::string& valid_split, uint64_t count,
                       const fs::path& dir, uint64_t cap) {
  ShardSequence valid(dir, valid_split, cap);
  const uint64_t keep = train.tokens - count;
  uint64_t offset = 0;  // global index of the current shard's first token
  std::vector<std::pair<fs::path, uint64_t>> truncate;  // shards to shrink to n tokens
  for (const auto& path : train.shards) {
    const ShardReader reader(path);
    const uint64_t end = offset + reader.size();
    if (end > keep) {
      const uint64_t local = keep > offset ? keep - offset : 0;
      valid.append(reader.tokens().subspan(local));
      truncate.emplace_back(path, local);
    }
    offset = end;
  }
  for (const auto& [path, tokens] : truncate) {
    if (tokens == 0 && path != train.shards.front()) {
      fs::remove(path);
      train.shards.erase(std::find(train.shards.begin(), train.shards.end(), path));
      continue;
    }
    // Rewrite the header count and cut the file (llm.c format: header, then uint16 tokens).
    fs::resize_file(path, kShardHeaderBytes + tokens * sizeof(uint16_t));
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto count32 = static_cast<int32_t>(tokens);
    file.seekp(2 * sizeof(int32_t));
    file.write(reinterpret_cast<const char*>(&count32), sizeof(count32));
    AT_CHECK(file, "cannot rewrite the header of ", path.string());
  }
  train.tokens = keep;
  return valid.finish();
}

void remove_old_shards(const fs::path& dir, const std::string& split) {
  if (split.empty() || !fs::is_directory(dir)) return;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == split.size() + 11 && name.starts_with(split + "_") && name.ends_with(".bin"))
      fs::remove(entry.path());
  }
}

uint64_t total_size(const std::vector<InputFile>& files) {
  uint64_t bytes = 0;
  for (const auto& file : files) bytes += fs::file_size(file.path);
  return bytes;
}

}  // namespace

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
  AT_CHECK(tokenizer->vocab_size() <= 65536, "tokenizer ", tokenizer->name(), " has ",
           tokenizer->vocab_size(), " tokens; shards store uint16 ids (at most 65536)");
  AT_CHECK(options.shard_tokens > 0, "shard_tokens must be positive");

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
    ShardSequence output(options.output_dir, input.split, options.shard_tokens);
    SplitTokenizer split_tokenizer(*tokenizer, options, output, progress, bytes_done, tokens_done);
    for (const auto& file : input.files) {
      read_documents(file, options.text_column, [&](std::string&& text, bool starts_document) {
        split_tokenizer.add(std::move(text), starts_document);
      });
    }
    split_tokenizer.flush();
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
    valid = carve_tail(train, options.valid_split, count, options.output_dir, options.shard_tokens);
  }
  result.splits.push_back(std::move(train));
  if (valid) result.splits.push_back(std::move(*valid));
  result.seconds = timer.seconds();
  result.tokens_per_second = static_cast<double>(tokens_done) / std::max(result.seconds, 1e-9);
  write_manifest(options, key, result);

  std::vector<std::string> counts;
  for (const auto& split : result.splits) counts.push_back(cat(split.split, " ", split.tokens));
  log::info("prepared ", tokens_done, " tokens (", join(counts, ", "), ") into ",
            options.output_dir.string(), " in ", result.seconds,
            " s: ", static_cast<uint64_t>(result.tokens_per_second), " tokens/s");
  return result;
}

PrepareResult prepare(const PrepareOptions& options) {
  const ResolvedInputs inputs = resolve_inputs(options);
  const auto tokenizer = make_tokenizer(options.tokenizer, options.gpt2_dir);
  return prepare_resolved(options, inputs, tokenizer, manifest_key(options, inputs, *tokenizer));
}

PrepareResult prepare_if_needed(const PrepareOptions& options) {
  const ResolvedInputs inputs = resolve_inputs(options);
  const auto tokenizer = make_tokenizer(options.tokenizer, options.gpt2_dir);
  const nlohmann::json key = manifest_key(options, inputs, *tokenizer);
  if (auto reused = reusable_manifest(options, key)) {
    log::info("reusing prepared data in ", options.output_dir.string(), " (inputs unchanged)");
    return *reused;
  }
  return prepare_resolved(options, inputs, tokenizer, key);
}

PrepareResult prepare_if_needed_collective(const PrepareOptions& options, MPI_Comm comm) {
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string failure;
  if (rank == 0) {
    try {
      prepare_if_needed(options);
    } catch (const std::exception& error) {
      failure = error.what();
    }
  }
  agree_or_throw(failure.empty(), failure, comm);
  return read_manifest(options.output_dir);
}

}  // namespace autotrain::data
