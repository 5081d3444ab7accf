#include "manifest.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/loss_mask.hpp"
#include "autotrain/data/shard.hpp"
#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kManifestVersion = 2;

json describe_files(const SplitInput& input) {
  json files = json::array();
  for (const auto& file : input.files) {
    // POSIX stat: file_time_type's epoch is implementation-defined, st_mtim is Unix time.
    struct stat info {};
    AT_CHECK(::stat(file.path.c_str(), &info) == 0, "cannot stat ", file.path.string());
    const int64_t mtime_ns =
        static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
    files.push_back({{"path", fs::absolute(file.path).lexically_normal().string()},
                     {"size", fs::file_size(file.path)},
                     {"mtime_ns", mtime_ns}});
  }
  return {{"split", input.split}, {"files", files}};
}

}  // namespace

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  AT_CHECK(in, "cannot open ", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& error) {
    throw Error(cat(path.string(), ": not valid JSON: ", error.what()));
  }
}

void write_json_atomically(const fs::path& path, const json& value) {
  // Written under a temporary name and renamed: the file is either complete or absent.
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary);
    out << value.dump(2) << "\n";
    AT_CHECK(out, "cannot write ", temporary.string());
  }
  fs::rename(temporary, path);
}

std::string hash_files(const std::vector<fs::path>& files) {
  uint64_t hash = 0xcbf29ce484222325ull;
  std::vector<char> buffer(1 << 16);
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    AT_CHECK(in, "cannot read ", path.string(), " to hash it");
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        hash = (hash ^ static_cast<uint8_t>(buffer[static_cast<size_t>(i)])) * 0x100000001b3ull;
      }
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::string describe_split(const SplitInput& split) {
  uintmax_t bytes = 0;
  for (const auto& file : split.files) bytes += fs::file_size(file.path);
  return cat(
      split.split, " ",
      split.files.size() == 1 ? split.files[0].path.string() : cat(split.files.size(), " files"),
      " (", human_bytes(double(bytes)), ")");
}

ResolvedInputs resolve_inputs(const PrepareOptions& options) {
  ResolvedInputs inputs{require_split(options.data_path, options.train_split, true), std::nullopt,
                        0};
  if (options.valid_split.empty()) return inputs;
  AT_CHECK(options.valid_split != options.train_split, "valid_split and train_split are both '",
           options.train_split, "'; give the validation split another name");
  inputs.valid = options.require_valid_split
                     ? std::optional(require_split(options.data_path, options.valid_split, false))
                     : find_split(options.data_path, options.valid_split, false);
  if (!inputs.valid) {
    inputs.valid_fraction =
        options.valid_fraction.value_or(fs::is_regular_file(options.data_path) ? 0.1 : 0.0);
    AT_CHECK(inputs.valid_fraction >= 0 && inputs.valid_fraction < 1,
             "valid_fraction must be in [0, 1), got ", inputs.valid_fraction);
  }
  return inputs;
}

json manifest_key(const PrepareOptions& options) {
  const auto tokenizer = make_tokenizer(options.tokenizer, tokenizer_options(options));
  return manifest_key(options, resolve_inputs(options), *tokenizer);
}

json manifest_key(const PrepareOptions& options, const ResolvedInputs& inputs,
                  const Tokenizer& tokenizer) {
  json splits = json::array({describe_files(inputs.train)});
  if (inputs.valid) splits.push_back(describe_files(*inputs.valid));
  json key = {{"inputs", splits},
              {"tokenizer",
               {{"name", tokenizer.name()},
                {"vocab_size", tokenizer.vocab_size()},
                {"eot_token", tokenizer.eot_token()},
                {"vocabulary_hash", hash_files(tokenizer.vocabulary_files())},
                {"parse_special_tokens", options.parse_special_tokens}}},
              {"shard_version", shard_version_for(tokenizer.vocab_size())},
              {"text_column", options.text_column},
              {"add_eos_token", options.add_eos_token},
              {"train_split", options.train_split},
              {"valid_split", options.valid_split},
              {"valid_fraction", inputs.valid_fraction},
              {"shard_tokens", options.shard_tokens}};
  // Only with a template: folders prepared before chat templates existed stay reusable. The
  // tokenizer's own template is in its vocabulary files' hash (tokenizer_config.json).
  if (!options.chat_template.empty()) {
    key["chat_template"] = options.chat_template;
    key["train_on_completions_only"] = options.completions_only;
  }
  return key;
}

void write_manifest(const PrepareOptions& options, const json& key, const PrepareResult& result) {
  json splits = json::array();
  for (const auto& split : result.splits) {
    json shards = json::array();
    for (const auto& path : split.shards) {
      shards.push_back({{"file", path.filename().string()}, {"tokens", ShardReader(path).size()}});
    }
    splits.push_back({{"split", split.split}, {"tokens", split.tokens}, {"shards", shards}});
  }
  const json manifest = {
      {"format",
       "autotrain token shards (llm.c layout: 256 x int32 header; version 1 uint16 tokens, "
       "version 2 uint32 tokens)"},
      {"version", kManifestVersion},
      {"key", key},
      {"shard_version", key.at("shard_version")},
      {"tokenizer",
       {{"name", result.tokenizer},
        {"vocab_size", result.vocab_size},
        {"eot_token", result.eot_token}}},
      {"splits", splits},
      {"seconds", result.seconds},
      {"tokens_per_second", result.tokens_per_second}};
  write_json_atomically(options.output_dir / kManifestName, manifest);
}

json read_manifest_key(const fs::path& dir) {
  const json manifest = read_json_file(dir / kManifestName);
  AT_CHECK(manifest.is_object() && manifest.contains("key"), (dir / kManifestName).string(),
           ": has no key; prepare the data again");
  return manifest.at("key");
}

PrepareResult read_manifest(const fs::path& dir) {
  const fs::path path = dir / kManifestName;
  AT_CHECK(fs::exists(path), "no ", kManifestName, " in ", dir.string(),
           "; create the shards with `autotrain prepare`");
  const json manifest = read_json_file(path);
  try {
    AT_CHECK(manifest.at("version").get<int>() == kManifestVersion, path.string(), ": version ",
             manifest.at("version"), " is not ", kManifestVersion, "; prepare the data again");
    PrepareResult result;
    result.output_dir = dir;
    result.tokenizer = manifest.at("tokenizer").at("name").get<std::string>();
    result.vocab_size = manifest.at("tokenizer").at("vocab_size").get<int>();
    result.eot_token = manifest.at("tokenizer").at("eot_token").get<int>();
    result.seconds = manifest.at("seconds").get<double>();
    result.tokens_per_second = manifest.at("tokens_per_second").get<double>();
    for (const auto& split : manifest.at("splits")) {
      SplitShards shards{
          split.at("split").get<std::string>(), {}, split.at("tokens").get<uint64_t>()};
      for (const auto& shard : split.at("shards"))
        shards.shards.push_back(dir / shard.at("file").get<std::string>());
      result.splits.push_back(std::move(shards));
    }
    return result;
  } catch (const json::exception& error) {
    throw Error(
        cat(path.string(), ": unexpected layout (", error.what(), "); prepare the data again"));
  }
}

std::optional<PrepareResult> reusable_manifest(const PrepareOptions& options, const json& key) {
  const fs::path path = options.output_dir / kManifestName;
  if (!fs::exists(path)) return std::nullopt;
  try {
    const json manifest = read_json_file(path);
    if (manifest.value("key", json()) != key) {
      log::info("the prepared data in ", options.output_dir.string(),
                " was made from other inputs or options; preparing again");
      return std::nullopt;
    }
    PrepareResult result = read_manifest(options.output_dir);
    for (const auto& split : manifest.at("splits")) {
      for (const auto& shard : split.at("shards")) {
        const fs::path shard_file = options.output_dir / shard.at("file").get<std::string>();
        const uint64_t expected =
            kShardHeaderBytes + shard.at("tokens").get<uint64_t>() *
                                    shard_token_bytes(manifest.at("shard_version").get<int32_t>());
        if (!fs::exists(shard_file) || fs::file_size(shard_file) != expected) {
          log::info("shard ", shard_file.string(), " is missing or changed; preparing again");
          return std::nullopt;
        }
        if (options.completions_only && !fs::exists(mask_path(shard_file))) {
          log::info("loss mask ", mask_path(shard_file).string(), " is missing; preparing again");
          return std::nullopt;
        }
      }
    }
    result.reused = true;
    return result;
  } catch (const std::exception& error) {
    // Only a tokenizer or input error is worth stopping for, and prepare() meets it again.
    log::info("cannot reuse ", path.string(), " (", error.what(), "); preparing again");
    return std::nullopt;
  }
}

}  // namespace autotrain::data
