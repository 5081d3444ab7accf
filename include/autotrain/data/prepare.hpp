#pragma once
// `autotrain prepare`: text in (text_input.hpp layouts), token shards out (shard.hpp format),
// plus <output>/manifest.json describing what was prepared from what.
//
// Conversations (chat_template): each one is rendered by the template and tokenized as it is
// (the template writes its own bos_token; the tokenizer's post-processor adds nothing), the
// end-of-text token after it with add_eos_token; with completions_only a loss mask is written
// beside each shard.
// Documents: with add_eos_token, the end-of-text token is written BEFORE each document (as
// llm.c does), so every shard of a split starts with it and a model learns "after EOT, a new
// document begins". Tokenization runs on `threads` std::threads; the output is identical for
// any thread count (work is cut independently of it and written in input order).
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

struct PrepareOptions {
  std::filesystem::path data_path;   // folder or single file (text_input.hpp)
  std::filesystem::path output_dir;  // shards and manifest.json go here
  std::string tokenizer = "gpt2";    // gpt2 | byte | a tokenizer.json or a folder holding one
  std::filesystem::path gpt2_dir;    // vocabulary folder; empty = data_dir()/gpt2
  bool parse_special_tokens = true;  // added special tokens written in text become their ids
  std::string train_split = "train";
  std::string valid_split = "valid";  // empty = no validation split
  bool require_valid_split = false;   // a missing valid split file is an error (not carved)
  std::string text_column = "text";
  // Conversations (data/chat_format.hpp): empty = plain text; "tokenizer", "chatml" or
  // "zephyr" renders text_column's lists of messages with that template.
  std::string chat_template;
  // With chat_template: loss masks beside the shards (data/loss_mask.hpp), so that only the
  // assistant turns carry loss (train_on_completions_only).
  bool completions_only = false;
  bool add_eos_token = true;
  int threads = 0;  // 0 = all hardware threads
  // Fraction of the train tokens carved off the END of the train split into the valid split
  // when there is no valid split file. Unset: 0.1 when data_path is a single file, else 0.
  std::optional<double> valid_fraction;
  uint64_t shard_tokens = 100'000'000;  // cap per shard file
  // Text per work unit: long documents are cut into units of about this size at safe points
  // (tests make it small).
  size_t unit_bytes = 256 << 10;
  bool show_progress = true;  // progress bar on a terminal, plain lines otherwise
};

struct SplitShards {
  std::string split;
  std::vector<std::filesystem::path> shards;
  uint64_t tokens = 0;
};

struct PrepareResult {
  std::filesystem::path output_dir;
  std::vector<SplitShards> splits;  // train first, then valid when there is one
  std::string tokenizer;
  int vocab_size = 0;
  int eot_token = 0;
  bool reused = false;  // prepare_if_needed found matching shards
  double seconds = 0;
  double tokens_per_second = 0;
  const SplitShards* find(const std::string& split) const;
};

TokenizerOptions tokenizer_options(const PrepareOptions& options);

// Whether `data_path` is a folder prepare() wrote (it holds manifest.json): prepare_if_needed
// then uses its shards as they are, after checking they were made with the same tokenizer.
bool is_prepared_folder(const std::filesystem::path& data_path);

// Tokenizes the input and writes the shards and manifest, replacing earlier shards of the
// same splits in output_dir.
PrepareResult prepare(const PrepareOptions& options);

// Reuses output_dir when its manifest was written for the same inputs (paths, sizes,
// modification times), tokenizer (name and a hash of its vocabulary files) and options, and
// every shard it lists is intact; prepares again otherwise. The trainer calls this to turn a
// raw data_path into shards inside the project folder.
PrepareResult prepare_if_needed(const PrepareOptions& options);

// prepare_if_needed on rank 0 of `comm` while the others wait; a failure on rank 0 is raised
// on every rank (CollectiveError). Assumes output_dir is on a file system all ranks see.
PrepareResult prepare_if_needed_collective(const PrepareOptions& options, MPI_Comm comm);

// What prepare_if_needed would do, found without tokenizing (train --dry-run): the input files
// exist, the first record of each csv/jsonl file has text_column, the tokenizer loads, a
// prepared data_path was made with it. Throws the Error tokenizing would meet first.
struct InputsCheck {
  std::string summary;  // "train data/train.csv (1.1 MiB); valid ...; to be tokenized into ..."
  int vocab_size = 0;   // the tokenizer's
};
InputsCheck check_inputs(const PrepareOptions& options);

// What prepare_if_needed compares: the inputs, tokenizer and options that determine the shards.
nlohmann::json manifest_key(const PrepareOptions& options);
// The result recorded in <dir>/manifest.json (Error when missing or unreadable).
PrepareResult read_manifest(const std::filesystem::path& dir);

constexpr const char* kManifestName = "manifest.json";

}  // namespace autotrain::data
