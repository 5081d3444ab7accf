#pragma once
// Preference pairs for AutoTrain's dpo, orpo and reward trainers (docs/data.md, "Preference
// data"): a prompt, a chosen and a rejected completion per row, tokenized as TRL tokenizes them,
// prepared once into <output_dir> and memory-mapped by PairDataset.
//
// Tokens (TRL's DPOTrainer.tokenize_row, decoder-only):
//   prompt     tokenized without special tokens; the tokenizer's prefix (its post-processor's
//              BOS, e.g. Llama's <s>) put before it unless it already starts with it;
//   completion tokenized without special tokens, then EOS;
//   truncation the prompt to max_prompt_length keeping its END, each completion to
//              max_completion_length keeping its start, then prompt + completion to max_length
//              keeping the start. A pair whose completion is then empty (the prompt fills
//              max_length) is dropped and counted, as TRL drops it.
// Reward mode (TRL's RewardTrainer, AutoTrain's reward trainer): no prompt; chosen and rejected
// each tokenized as a whole with the tokenizer's special tokens; a pair either of whose
// sequences is longer than max_length is dropped and counted, as AutoTrain's filter drops it.
//
// Files, per split S, beside <output_dir>/manifest.json:
//   S_pairs_NNNNNN.bin  token shards (shard.hpp) holding prompt, chosen, rejected of every pair
//                       in order;
//   S_pairs.idx         the pair index: 8 x uint64 header [magic, version, pairs, tokens,
//                       eos, pad, reward, 0], then 3 x pairs + 1 uint64 offsets into the split's
//                       tokens: pair i is prompt [o[3i], o[3i+1]), chosen [o[3i+1], o[3i+2]),
//                       rejected [o[3i+2], o[3i+3]);
//   pairs.json          what was prepared from what (the manifest key of prepare.hpp plus the
//                       pair options), so a second run with the same inputs reuses the files.
#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "autotrain/data/mapped_file.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

struct PreferenceOptions {
  // data_path, output_dir, tokenizer, splits, chat_template, threads...; prepare.text_column is
  // the chosen column (AutoTrain's text_column). add_eos_token and completions_only do not apply.
  PrepareOptions prepare;
  std::string prompt_column = "prompt";      // AutoTrain's prompt_text_column
  std::string rejected_column = "rejected";  // AutoTrain's rejected_text_column
  bool reward = false;                       // reward mode: no prompt
  int max_prompt_length = 0, max_completion_length = 0, max_length = 0;  // 0 = no bound
};

// The text of one pair (after chat templates), and its tokens.
struct PairText {
  std::string prompt, chosen, rejected;
};
struct PairTokens {
  std::vector<TokenId> prompt, chosen, rejected;
  bool prompt_truncated = false;
  int completions_truncated = 0;  // 0, 1 or 2
  bool dropped = false;           // nothing of a completion is left (see above)
};
// TRL's tokenization and truncation of one pair (the rules above).
PairTokens tokenize_pair(const PairText& text, const Tokenizer& tokenizer,
                         const PreferenceOptions& options);

struct PairSplit {
  std::string split;
  std::vector<std::filesystem::path> files;  // token shards, in order
  std::filesystem::path index;               // S_pairs.idx
  uint64_t pairs = 0, prompts_truncated = 0, completions_truncated = 0;
  uint64_t pairs_dropped = 0;  // not in `pairs`
};

struct PreparedPairs {
  std::filesystem::path output_dir;
  std::vector<PairSplit> splits;  // train first, then valid when there is one
  std::string tokenizer;
  int vocab_size = 0;
  std::int32_t eos_token = 0, pad_token = 0;
  bool reused = false;
  const PairSplit* find(const std::string& split) const;
};

// Reads, tokenizes and writes the pairs of every split (replacing earlier pair files).
PreparedPairs prepare_pairs(const PreferenceOptions& options);
// prepare_pairs unless <output_dir>/pairs.json records the same inputs, tokenizer and options
// and its files are intact.
PreparedPairs prepare_pairs_if_needed(const PreferenceOptions& options);
// prepare_pairs_if_needed on rank 0 of `comm` under the collective deadline while the others
// wait; a failure on rank 0 is raised on every rank (CollectiveError). Every rank returns what
// pairs.json records.
PreparedPairs prepare_pairs_if_needed_collective(const PreferenceOptions& options, MPI_Comm comm);
// The record of <dir>/pairs.json (Error when missing or unreadable).
PreparedPairs read_pairs_manifest(const std::filesystem::path& dir);

// What prepare_pairs_if_needed would do, found without tokenizing (train --dry-run): the input
// files exist, the first record of each has the pair's columns, the tokenizer loads (and with
// chat_template, its template parses).
struct PairsCheck {
  std::string summary;  // "train data/train.jsonl (1.1 MiB); valid ...; to be tokenized into ..."
  int vocab_size = 0;   // the tokenizer's
};
PairsCheck check_pair_inputs(const PreferenceOptions& options);

constexpr const char* kPairsManifestName = "pairs.json";

enum class PairPart { prompt, chosen, rejected };

// The pairs of one split, memory-mapped.
class PairDataset {
 public:
  explicit PairDataset(const PairSplit& split);

  std::uint64_t num_pairs() const { return pairs_; }
  std::uint64_t length(std::uint64_t pair, PairPart part) const;
  // The ids of one part (tests, tools); load_pair_rows copies without allocating.
  std::vector<TokenId> ids(std::uint64_t pair, PairPart part) const;
  void copy(std::uint64_t pair, PairPart part, std::span<TokenId> out) const;
  // The longest prompt + completion of the split (a row's length).
  std::uint64_t max_sequence_length() const;
  TokenId pad_token() const { return pad_; }
  bool reward() const { return reward_; }
  // An Error naming the shard, position and id of the first id >= vocab_size.
  void check_ids_below(int vocab_size) const;

 private:
  std::uint64_t offset(std::uint64_t pair, int boundary) const;

  TokenDataset tokens_;
  MappedFile index_;
  std::uint64_t pairs_ = 0;
  TokenId pad_ = 0;
  bool reward_ = false;
};

// Micro-batch rows of `pairs` (B of them): row b = prompt+chosen of pairs[b], row B+b =
// prompt+rejected of pairs[b]. Each row holds the whole sequence s (n tokens, n <= T) in
// inputs[0..n), pad_token after; targets[t] = s[t+1] where s[t+1] is a completion token (in
// reward mode: every t+1 < n), kIgnoreTarget elsewhere; lengths[row] = n. inputs and targets
// hold 2B x T ids, lengths 2B. A sequence longer than T is an Error. Allocates nothing.
void load_pair_rows(const PairDataset& dataset, std::span<const std::uint64_t> pairs, int T,
                    std::span<std::int32_t> inputs, std::span<std::int32_t> targets,
                    std::span<std::int32_t> lengths);

}  // namespace autotrain::data
