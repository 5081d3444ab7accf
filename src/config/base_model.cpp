// Locating the base model: a folder, a Hub id in the offline Hub cache, or a preset.
#include "autotrain/config/base_model.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::config {
namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool is_commit_hash(std::string_view revision) {
  if (revision.size() != 40) return false;
  for (const char c : revision) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// org/name or a bare name, each part of letters, digits and -_. (the Hub's rule).
bool looks_like_repo_id(std::string_view id) {
  if (id.empty() || id.front() == '/' || id.back() == '/' || id.front() == '.') return false;
  int slashes = 0;
  for (const char c : id) {
    if (c == '/') {
      ++slashes;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return slashes <= 1 && id.find("..") == std::string_view::npos;
}

// GPT-2's checkpoints moved from bare names to openai-community/; a cache may hold either.
std::vector<std::string> repo_id_spellings(std::string_view model) {
  static constexpr std::string_view kLegacy[] = {"gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
                                                 "distilgpt2"};
  std::vector<std::string> ids = {std::string(model)};
  constexpr std::string_view kOrg = "openai-community/";
  for (const std::string_view legacy : kLegacy) {
    if (model == legacy) ids.push_back(cat(kOrg, legacy));
    if (model.starts_with(kOrg) && model.substr(kOrg.size()) == legacy) {
      ids.emplace_back(legacy);
    }
  }
  return ids;
}

// The spelling to download: openai-community/gpt2 rather than the legacy gpt2.
std::string hub_spelling(std::string_view model) {
  for (const std::string& id : repo_id_spellings(model)) {
    if (id.find('/') != std::string::npos) return id;
  }
  return std::string(model);
}

// A revision names a file under refs/: relative, without '.' or '..' parts.
bool is_ref_name(std::string_view revision) {
  if (revision.empty() || revision.front() == '/' || revision.find('\\') != std::string::npos)
    return false;
  for (const auto& part : fs::path(revision)) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

// The snapshot a refs/ file names: one folder under snapshots/ (huggingface_hub writes the
// commit hash). The cache comes from the Hub and elsewhere: a ref naming '../x' or a long file
// is refused, not followed.
std::string read_ref(const fs::path& ref) {
  constexpr size_t kLongest = 256;
  std::ifstream in(ref, std::ios::binary);
  std::string text(kLongest + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  AT_CHECK(text.size() <= kLongest, ref.string(), ": longer than ", kLongest,
           " bytes; expected the commit hash of a snapshot");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  const bool plain = std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
  AT_CHECK(!text.empty() && plain && text != "." && text != "..", ref.string(), ": names '", text,
           "', expected the commit hash of a snapshot (a folder name under snapshots/)");
  return text;
}

// data/models/<model with / as -->/ when it holds a config.json; empty otherwise.
fs::path known_architecture_dir(std::string_view model) {
  std::string name(model);
  for (size_t at = name.find('/'); at != std::string::npos; at = name.find('/')) {
    name.replace(at, 1, "--");
  }
  if (name.empty() || name.find("..") != std::string::npos) return {};
  const fs::path dir = data_dir() / "models" / name;
  std::error_code error;
  return fs::is_regular_file(dir / "config.json", error) ? dir : fs::path();
}

}  // namespace

std::string peft_base_name(std::string_view model, const fs::path& folder) {
  std::error_code error;
  if (folder.empty()) return {};
  // A snapshot of the cache: <cache>/models--org--name/snapshots/<revision>.
  const bool in_hub_cache =
      folder.parent_path().parent_path().filename().string().starts_with("models--");
  if (model.empty() || !in_hub_cache || fs::is_directory(fs::path(model), error))
    return folder.string();
  return std::string(model);
}

std::string BaseModel::describe(int64_t seed) const {
  if (from_scratch) return cat("random initialisation (seed ", seed, ")");
  if (folder.empty()) return cat("weights of ", name, " MISSING");
  return cat("weights from ", folder.string());
}

std::string BaseModel::missing_message() const {
  const bool preset_only =
      name == "tiny" || (!known_architecture.empty() && name.find('/') == std::string::npos);
  if (preset_only) {
    return cat("base_model ", name,
               " is an architecture preset without pretrained weights: set from_scratch: true "
               "(--from-scratch) to train it from random weights");
  }
  std::string where;
  for (const auto& dir : searched) where += cat(where.empty() ? "" : ", ", dir.string());
  if (where.empty()) where = "no cache folder: HF_HUB_CACHE, HF_HOME and HOME are all unset";
  return cat("base_model ", name, ": no such model folder, and not in the Hugging Face cache (",
             where, "; revision ", revision,
             "). autotrain never downloads: on a login node run `huggingface-cli download ",
             hub_spelling(name),
             "` (with the same HF_HOME), or set from_scratch: true (--from-scratch) to train its "
             "architecture from random weights");
}

std::vector<fs::path> hub_cache_dirs() {
  std::vector<fs::path> dirs;
  if (const std::string hub = env_or_empty("HF_HUB_CACHE"); !hub.empty()) dirs.emplace_back(hub);
  if (const std::string home = env_or_empty("HF_HOME"); !home.empty()) {
    dirs.push_back(fs::path(home) / "hub");
  }
  if (const std::string home = env_or_empty("HOME"); !home.empty()) {
    dirs.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
  }
  return dirs;
}

std::optional<fs::path> find_in_hub_cache(const fs::path& cache, std::string_view repo_id,
                                          std::string_view revision, HubRepo kind) {
  std::string folder = (kind == HubRepo::model ? "models--" : "datasets--") + std::string(repo_id);
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/')) {
    folder.replace(at, 1, "--");
  }
  const fs::path repo = cache / folder;
  std::error_code error;
  if (!fs::is_directory(repo, error)) return std::nullopt;
  AT_CHECK(is_ref_name(revision), "revision '", revision,
           "': expected a branch or tag under refs/ or a 40-digit commit (no '.' or '..' parts)");
  std::string commit(revision);
  if (!is_commit_hash(revision)) {
    const fs::path ref = repo / "refs" / std::string(revision);
    if (!fs::is_regular_file(ref, error)) return std::nullopt;
    commit = read_ref(ref);
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (commit.empty()) return std::nullopt;
  if (kind == HubRepo::model ? !fs::is_regular_file(snapshot / "config.json", error)
                             : !fs::is_directory(snapshot, error)) {
    return std::nullopt;
  }
  return snapshot;
}

fs::path locate_dataset(std::string_view data_path) {
  std::error_code error;
  const fs::path path(data_path);
  if (data_path.empty() || fs::exists(path, error) || !looks_like_repo_id(data_path) ||
      data_path.find('/') == std::string_view::npos) {
    return path;
  }
  const std::vector<fs::path> caches = hub_cache_dirs();
  for (const fs::path& cache : caches) {
    if (auto found = find_in_hub_cache(cache, data_path, "main", HubRepo::dataset)) return *found;
  }
  std::vector<std::string> searched;
  for (const fs::path& cache : caches) searched.push_back(cache.string());
  throw Error(cat("data_path ", data_path,
                  ": no such file or folder, and no dataset of that id in the Hugging Face cache (",
                  join(searched, ", "),
                  "; revision main). autotrain never downloads: on a login node run "
                  "`huggingface-cli download --repo-type dataset ",
                  data_path, "` (with the same HF_HOME)"));
}

BaseModel locate_base_model(std::string_view model, std::string_view revision, bool from_scratch) {
  BaseModel base;
  base.name = std::string(model);
  base.revision = std::string(revision);
  base.from_scratch = from_scratch;
  std::error_code error;
  const fs::path path(model);
  if (fs::is_directory(path, error)) {
    AT_CHECK(fs::is_regular_file(path / "config.json", error), "base_model ", model,
             ": the folder has no config.json (expected a Hugging Face model folder)");
    base.folder = fs::absolute(path).lexically_normal();
    return base;
  }
  AT_CHECK(!fs::exists(path, error) || !model.ends_with(".json"), "base_model ", model,
           ": expected a model folder (the one holding config.json), not a file");
  if (!looks_like_repo_id(model)) {
    base.known_architecture = known_architecture_dir(model);
    return base;
  }
  base.searched = hub_cache_dirs();
  for (const fs::path& cache : base.searched) {
    for (const std::string& id : repo_id_spellings(model)) {
      if (auto found = find_in_hub_cache(cache, id, revision)) {
        base.folder = *found;
        return base;
      }
    }
  }
  base.known_architecture = known_architecture_dir(model);
  return base;
}

std::optional<int64_t> tokenizer_max_length(const fs::path& folder) {
  std::ifstream tokenizer_config(folder / "tokenizer_config.json");
  if (!tokenizer_config.good()) return std::nullopt;
  const auto json = nlohmann::json::parse(tokenizer_config, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("model_max_length") ||
      !json["model_max_length"].is_number()) {
    return std::nullopt;
  }
  const double bound = json["model_max_length"].get<double>();
  if (bound >= 1 && bound < 1e9) return static_cast<int64_t>(bound);
  return std::nullopt;
}

}  // namespace autotrain::config
