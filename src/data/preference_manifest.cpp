#include "preference_manifest.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "pair_files.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kPairsManifestVersion = 1;

json describe_split(const PairSplit& split) {
  json shards = json::array();
  for (const auto& path : split.files)
    shards.push_back({{"file", path.filename().string()}, {"tokens", ShardReader(path).size()}});
  return {{"split", split.split},
          {"pairs", split.pairs},
          {"prompts_truncated", split.prompts_truncated},
          {"completions_truncated", split.completions_truncated},
          {"pairs_dropped", split.pairs_dropped},
          {"index", split.index.filename().string()},
          {"shards", shards}};
}

PairSplit split_of(const json& record, const fs::path& dir) {
  PairSplit split{record.at("split").get<std::string>(),
                  {},
                  dir / record.at("index").get<std::string>(),
                  record.at("pairs").get<uint64_t>(),
                  record.at("prompts_truncated").get<uint64_t>(),
                  record.at("completions_truncated").get<uint64_t>(),
                  record.at("pairs_dropped").get<uint64_t>()};
  for (const auto& shard : record.at("shards"))
    split.files.push_back(dir / shard.at("file").get<std::string>());
  return split;
}

// Why the files recorded in `manifest` cannot be used as they are; "" when they can.
std::string damage(const json& manifest, const fs::path& dir) {
  const auto token_bytes = shard_token_bytes(manifest.at("shard_version").get<int32_t>());
  for (const auto& split : manifest.at("splits")) {
    const fs::path index = dir / split.at("index").get<std::string>();
    if (!fs::exists(index) || fs::file_size(index) != pair_index_bytes(split.at("pairs")))
      return cat("pair index ", index.string(), " is missing or changed");
    for (const auto& shard : split.at("shards")) {
      const fs::path file = dir / shard.at("file").get<std::string>();
      const uint64_t bytes = kShardHeaderBytes + shard.at("tokens").get<uint64_t>() * token_bytes;
      if (!fs::exists(file) || fs::file_size(file) != bytes)
        return cat("shard ", file.string(), " is missing or changed");
    }
  }
  return "";
}

}  // namespace

json pairs_manifest_key(const PreferenceOptions& options, const ResolvedInputs& inputs,
                        const Tokenizer& tokenizer) {
  json key = manifest_key(options.prepare, inputs, tokenizer);
  key["pairs"] = {{"version", kPairsManifestVersion},
                  {"prompt_column", options.prompt_column},
                  {"rejected_column", options.rejected_column},
                  {"reward", options.reward},
                  {"max_prompt_length", options.max_prompt_length},
                  {"max_completion_length", options.max_completion_length},
                  {"max_length", options.max_length}};
  return key;
}

void write_pairs_manifest(const PreferenceOptions& options, const json& key,
                          const PreparedPairs& prepared) {
  json splits = json::array();
  for (const auto& split : prepared.splits) splits.push_back(describe_split(split));
  write_json_atomically(
      options.prepare.output_dir / kPairsManifestName,
      {{"format",
        "autotrain preference pairs: <split>_pairs_NNNNNN.bin token shards (llm.c layout) and "
        "<split>_pairs.idx (8 x uint64 header, then 3 x pairs + 1 uint64 token offsets)"},
       {"version", kPairsManifestVersion},
       {"key", key},
       {"shard_version", key.at("shard_version")},
       {"tokenizer", {{"name", prepared.tokenizer}, {"vocab_size", prepared.vocab_size}}},
       {"eos_token", prepared.eos_token},
       {"pad_token", prepared.pad_token},
       {"splits", splits}});
}

PreparedPairs read_pairs_manifest(const fs::path& dir) {
  const fs::path path = dir / kPairsManifestName;
  AT_CHECK(fs::exists(path), "no ", kPairsManifestName, " in ", dir.string(),
           "; the preference pairs were not prepared there");
  const json manifest = read_json_file(path);
  try {
    AT_CHECK(manifest.at("version").get<int>() == kPairsManifestVersion, path.string(),
             ": version ", manifest.at("version"), " is not ", kPairsManifestVersion,
             "; delete it to prepare the pairs again");
    PreparedPairs prepared;
    prepared.output_dir = dir;
    prepared.tokenizer = manifest.at("tokenizer").at("name").get<std::string>();
    prepared.vocab_size = manifest.at("tokenizer").at("vocab_size").get<int>();
    prepared.eos_token = manifest.at("eos_token").get<int32_t>();
    prepared.pad_token = manifest.at("pad_token").get<int32_t>();
    for (const auto& split : manifest.at("splits")) prepared.splits.push_back(split_of(split, dir));
    return prepared;
  } catch (const json::exception& error) {
    throw Error(cat(path.string(), ": unexpected layout (", error.what(),
                    "); delete it to prepare the pairs again"));
  }
}

std::optional<PreparedPairs> reusable_pairs(const PreferenceOptions& options, const json& key) {
  const fs::path path = options.prepare.output_dir / kPairsManifestName;
  if (!fs::exists(path)) return std::nullopt;
  try {
    const json manifest = read_json_file(path);
    if (manifest.value("key", json()) != key) {
      log::info("the preference pairs in ", options.prepare.output_dir.string(),
                " were made from other inputs or options; preparing again");
      return std::nullopt;
    }
    if (const std::string why = damage(manifest, options.prepare.output_dir); !why.empty()) {
      log::info(why, "; preparing the preference pairs again");
      return std::nullopt;
    }
    PreparedPairs prepared = read_pairs_manifest(options.prepare.output_dir);
    prepared.reused = true;
    return prepared;
  } catch (const std::exception& error) {
    log::info("cannot reuse ", path.string(), " (", error.what(), "); preparing again");
    return std::nullopt;
  }
}

}  // namespace autotrain::data
