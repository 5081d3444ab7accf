#pragma once
// <output>/manifest.json: what prepare() made from what, and whether it can be reused.
#include <optional>

#include "autotrain/data/prepare.hpp"
#include "autotrain/data/text_input.hpp"

namespace autotrain::data {

struct ResolvedInputs {
  SplitInput train;
  std::optional<SplitInput> valid;  // a valid split file; when absent, valid_fraction may carve
  double valid_fraction = 0;
};

class Tokenizer;

ResolvedInputs resolve_inputs(const PrepareOptions& options);
// "train data/train.csv (1.1 MiB)", or "train 3 files (...)": the dry runs' description.
std::string describe_split(const SplitInput& split);
nlohmann::json manifest_key(const PrepareOptions& options, const ResolvedInputs& inputs,
                            const Tokenizer& tokenizer);
void write_manifest(const PrepareOptions& options, const nlohmann::json& key,
                    const PrepareResult& result);
// The recorded result when output_dir's manifest matches `key` and its shards are intact;
// nothing otherwise (with a log line saying why).
std::optional<PrepareResult> reusable_manifest(const PrepareOptions& options,
                                               const nlohmann::json& key);

// The key recorded in <dir>/manifest.json (Error when it cannot be read).
nlohmann::json read_manifest_key(const std::filesystem::path& dir);

// A JSON file (an Error naming it when it cannot be read or parsed), and one written under a
// temporary name and renamed, so that it is either complete or absent.
nlohmann::json read_json_file(const std::filesystem::path& path);
void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& value);

// FNV-1a 64 of the files' bytes, in order, as 16 hex digits.
std::string hash_files(const std::vector<std::filesystem::path>& files);

}  // namespace autotrain::data
