// Reading a model folder's safetensors into the flat parameter buffer.
#include "autotrain/train/pretrained.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "autotrain/ckpt/file_digest.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/folder.hpp"
#include "autotrain/model/init.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

std::string hex_hash(std::string_view prefix, uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return cat(prefix, text);
}

uint64_t fnv1a(std::string_view bytes, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (const unsigned char ch : bytes) hash = (hash ^ ch) * 0x100000001b3ULL;
  return hash;
}

// The index (of a sharded set) and each file's name and size, then every byte of the files
// (ckpt::files_digest, read by all ranks of `comm` together).
std::string weights_identity(const std::string& index_text, const std::vector<fs::path>& files,
                             MPI_Comm comm) {
  uint64_t hash = fnv1a(index_text);
  for (const fs::path& file : files) {
    std::error_code error;
    const uint64_t size = fs::file_size(file, error);
    hash = fnv1a(cat(file.filename().string(), ":", error ? 0 : size), hash);
  }
  const uint64_t digest = ckpt::files_digest(files, comm);
  std::string digest_bytes(8, '\0');
  for (int i = 0; i < 8; ++i) digest_bytes[size_t(i)] = static_cast<char>(digest >> (8 * i));
  return hex_hash(kWeightsHashPrefix, fnv1a(digest_bytes, hash));
}

// What checkpoints of earlier versions recorded ("fnv1a64:"): the index, then each file's size
// and only its first and last MiB.
std::string sampled_identity(const std::string& index_text, const std::vector<fs::path>& files) {
  constexpr uint64_t kSample = uint64_t{1} << 20;
  uint64_t hash = fnv1a(index_text);
  std::string buffer;
  for (const fs::path& file : files) {
    const uint64_t size = fs::file_size(file);
    hash = fnv1a(cat(file.filename().string(), ":", size), hash);
    std::ifstream in(file, std::ios::binary);
    for (const uint64_t at : {uint64_t{0}, size > kSample ? size - kSample : uint64_t{0}}) {
      buffer.assign(std::min(kSample, size), '\0');
      in.seekg(static_cast<std::streamoff>(at));
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      AT_CHECK(in.good(), file.string(), ": cannot read ", buffer.size(), " bytes at ", at);
      hash = fnv1a(buffer, hash);
    }
  }
  return hex_hash(kSampledHashPrefix, hash);
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  AT_CHECK(in.good(), "cannot read ", path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The index's shard names, in first-mention order, each a plain file name inside the folder.
std::vector<std::string> index_shards(const fs::path& index_path, const std::string& text) {
  const auto index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  AT_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(),
           index_path.string(), ": expected an object with a weight_map {tensor: file}");
  std::vector<std::string> shards;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    AT_CHECK(file.is_string(), index_path.string(), ": weight_map '", tensor,
             "' should name a file, got ", file.dump());
    const std::string name = file.get<std::string>();
    AT_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
             index_path.string(), ": weight_map '", tensor, "' names '", name,
             "', expected a file name inside the folder");
    if (std::find(shards.begin(), shards.end(), name) == shards.end()) shards.push_back(name);
  }
  AT_CHECK(!shards.empty(), index_path.string(), ": weight_map is empty");
  return shards;
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += cat(i ? ", " : "", shape[i]);
  return text + "]";
}

std::string listed(const std::vector<std::string>& names, size_t limit = 12) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < limit; ++i) text += cat(i ? ", " : "", names[i]);
  if (names.size() > limit) text += cat(" and ", names.size() - limit, " more");
  return text;
}

}  // namespace

PretrainedWeights::PretrainedWeights(fs::path folder, const model::ParamLayout& layout,
                                     std::uint64_t seed)
    : folder_(std::move(folder)), seed_(seed) {
  std::error_code error;
  const fs::path index_path = folder_ / kIndex;
  if (fs::is_regular_file(index_path, error)) {
    const std::string text = read_all(index_path);
    for (const std::string& shard : index_shards(index_path, text)) {
      AT_CHECK(fs::is_regular_file(folder_ / shard, error), index_path.string(), ": names ", shard,
               ", which is not in ", folder_.string());
      files_.emplace_back(folder_ / shard);
    }
  } else {
    AT_CHECK(fs::is_regular_file(folder_ / kSingle, error), folder_.string(), ": no ", kSingle,
             " or ", kIndex, " (pretrained weights in safetensors are expected)");
    files_.emplace_back(folder_ / kSingle);
  }
  std::map<std::string, Match, std::less<>> by_name;
  for (size_t f = 0; f < files_.size(); ++f) {
    for (const auto& entry : files_[f].entries()) {
      AT_CHECK(by_name.emplace(entry.name, Match{int(f), &entry}).second, folder_.string(),
               ": tensor ", entry.name, " is in two weight files");
    }
  }
  std::vector<std::string> missing, mismatched;
  matches_.resize(layout.tensors().size());
  for (size_t t = 0; t < layout.tensors().size(); ++t) {
    const auto& tensor = layout.tensors()[t];
    auto found = by_name.find(tensor.name);
    const std::string_view prefix = layout.family().optional_name_prefix();
    if (found == by_name.end() && !prefix.empty() && tensor.name.starts_with(prefix)) {
      found = by_name.find(std::string_view(tensor.name).substr(prefix.size()));
    }
    if (found == by_name.end()) {
      if (!draws_new_head(tensor)) missing.push_back(tensor.name);
      continue;
    }
    const auto expected = tensor.file_shape();
    if (found->second.entry->shape != expected) {
      mismatched.push_back(cat(found->first, " ", shape_text(found->second.entry->shape),
                               " (expected ", shape_text(expected), ")"));
    }
    matches_[t] = found->second;
    by_name.erase(found);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, match] : by_name) {
    if (!layout.family().ignored_file_tensor(layout.config(), name)) unexpected.push_back(name);
  }
  if (missing.empty() && mismatched.empty() && unexpected.empty()) return;
  std::string problems;
  if (!missing.empty()) problems += cat("; missing: ", listed(missing));
  if (!mismatched.empty()) problems += cat("; wrong shape: ", listed(mismatched));
  if (!unexpected.empty()) problems += cat("; unexpected: ", listed(unexpected));
  throw Error(cat(folder_.string(), ": the weights do not fit config.json's model", problems));
}

bool PretrainedWeights::draws_new_head(const model::ParamTensor& tensor) {
  if (tensor.role != model::Role::score) return false;
  const nlohmann::json config = model::read_config_json(folder_);
  if (model::read_hf_config(config, (folder_ / "config.json").string()).score_head) return false;
  const auto range = config.find("initializer_range");
  const bool given = range != config.end() && range->is_number() && range->get<double>() > 0;
  new_head_ = model::InitRule{model::InitRule::normal, given ? range->get<double>() : 0.02};
  return true;
}

void PretrainedWeights::fill(const model::ParamLayout& layout, std::span<float> out,
                             std::size_t begin) const {
  const std::size_t end = begin + out.size();
  AT_CHECK(end <= layout.padded_size(), "pretrained weights: range [", begin, ", ", end,
           ") exceeds the parameter buffer of ", layout.padded_size(), " elements");
  std::fill(out.begin(), out.end(), 0.0f);
  for (size_t t = 0; t < layout.tensors().size(); ++t) {
    const auto& tensor = layout.tensors()[t];
    const Match& match = matches_[t];
    if (match.file < 0) {
      model::init_tensor(tensor, *new_head_, seed_, out, begin);
      continue;
    }
    // The file's elements are a prefix of the tensor (wte's padded rows are not in it).
    const std::size_t stored = match.entry->elements();
    const std::size_t lo = std::max(begin, tensor.offset);
    const std::size_t hi = std::min(end, tensor.offset + stored);
    if (lo >= hi) continue;
    files_[size_t(match.file)].read_range(*match.entry, lo - tensor.offset,
                                          out.subspan(lo - begin, hi - lo));
  }
}

std::string PretrainedWeights::describe() const {
  return cat(
      "weights from ", folder_.string(), " (", files_.size(), " file",
      files_.size() == 1 ? "" : "s", ")",
      new_head_ ? cat("; a new score head: normal(0, ", new_head_->std, "), seed ", seed_) : "");
}

std::vector<fs::path> PretrainedWeights::files() const {
  std::vector<fs::path> paths;
  for (const auto& file : files_) paths.push_back(file.path());
  return paths;
}

std::unique_ptr<model::ParamSource> open_param_source(const RunSetup& setup,
                                                      const model::ParamLayout& layout) {
  if (setup.params().peft) {
    return std::make_unique<model::RandomInit>(static_cast<uint64_t>(setup.params().seed));
  }
  return open_base_weights(setup, layout);
}

std::unique_ptr<model::ParamSource> open_base_weights(const RunSetup& setup,
                                                      const model::ParamLayout& layout) {
  const config::BaseModel& base = setup.resolved.base_model;
  std::unique_ptr<model::ParamSource> source;
  std::string failure;
  try {
    if (base.from_scratch) {
      source = std::make_unique<model::RandomInit>(static_cast<uint64_t>(setup.params().seed));
    } else {
      AT_CHECK(!base.folder.empty(), base.missing_message());
      source = std::make_unique<PretrainedWeights>(base.folder, layout,
                                                   static_cast<uint64_t>(setup.params().seed));
    }
  } catch (const Error& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the base model's weights");
  return source;
}

std::unique_ptr<model::ParamSource> open_reference_weights(const RunSetup& setup,
                                                           const model::ParamLayout& layout) {
  const auto& params = setup.params();
  std::unique_ptr<model::ParamSource> source;
  std::string failure;
  try {
    const config::BaseModel ref =
        config::locate_base_model(params.model_ref, params.revision, false);
    AT_CHECK(!ref.folder.empty(), ref.missing_message());
    source = std::make_unique<PretrainedWeights>(ref.folder, layout);
  } catch (const Error& error) {
    failure = cat("model_ref ", params.model_ref, ": ", error.what(),
                  " (the reference must have the base model's architecture and shape)");
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the reference model's weights");
  return source;
}

std::string base_weights_hash(const config::BaseModel& base, MPI_Comm comm) {
  if (base.from_scratch || base.folder.empty()) return {};
  return weights_hash(base.folder, comm);
}

namespace {

// The index text ("" unsharded) and the weight files of a folder, as PretrainedWeights reads them.
std::pair<std::string, std::vector<fs::path>> weight_files(const fs::path& folder) {
  std::error_code error;
  if (!fs::is_regular_file(folder / kIndex, error)) return {{}, {folder / kSingle}};
  std::string text = read_all(folder / kIndex);
  std::vector<fs::path> files;
  for (const std::string& shard : index_shards(folder / kIndex, text))
    files.push_back(folder / shard);
  return {std::move(text), std::move(files)};
}

}  // namespace

std::string weights_hash(const fs::path& folder, MPI_Comm comm) {
  // Every rank lists the files itself; one that cannot fails them all, before the digest.
  std::pair<std::string, std::vector<fs::path>> listed;
  std::string failure;
  try {
    listed = weight_files(folder);
  } catch (const Error& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, comm, "the base model's weight files");
  return weights_identity(listed.first, listed.second, comm);
}

std::string sampled_weights_hash(const fs::path& folder) {
  const auto [text, files] = weight_files(folder);
  return sampled_identity(text, files);
}

}  // namespace autotrain::train
