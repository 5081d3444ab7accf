// The datasets library's split patterns (datasets/data_files.py: KEYWORDS_IN_DIR_NAME_BASE_PATTERNS
// and KEYWORDS_IN_FILENAME_BASE_PATTERNS), as regular expressions over paths relative to the
// folder with '/' between their parts.
#include "hf_split_files.hpp"

#include <algorithm>
#include <regex>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxFiles = 100000;  // a folder of more is not a dataset's snapshot
constexpr int kMaxDepth = 4;

const std::vector<std::vector<std::string>> kSynonyms = {{"train", "training"},
                                                         {"validation", "valid", "dev", "val"},
                                                         {"test", "testing", "eval", "evaluation"}};

std::vector<std::string> keywords(const std::string& split) {
  for (const auto& group : kSynonyms) {
    if (std::find(group.begin(), group.end(), split) != group.end()) return group;
  }
  return {split};
}

std::string regex_escape(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

// The data files below `folder` (relative paths), skipping hidden names.
std::vector<std::string> data_files(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink,
                                      error),
      end;
  for (; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".") || it.depth() >= kMaxDepth) {
      if (it->is_directory(error)) it.disable_recursion_pending();
      continue;
    }
    const std::string extension = it->path().extension().string();
    if ((extension == ".csv" || extension == ".jsonl" || extension == ".parquet") &&
        it->is_regular_file(error)) {
      files.push_back(it->path().lexically_relative(folder).generic_string());
      AT_CHECK(files.size() <= kMaxFiles, "data_path ", folder.string(), " holds more than ",
               kMaxFiles, " data files; give the folder of one dataset");
    }
  }
  AT_CHECK(!error, "cannot list data_path ", folder.string(), ": ", error.message());
  std::sort(files.begin(), files.end());
  return files;
}

enum class Where { dir_name, file_name };

std::regex split_pattern(const std::string& split, Where where) {
  std::string alternatives;
  for (const std::string& word : keywords(split)) {
    alternatives += (alternatives.empty() ? "" : "|") + regex_escape(word);
  }
  const std::string sep = "[-._ 0-9]";
  const std::string head = "(^|.*[-._ 0-9/])(" + alternatives + ")";
  return std::regex(where == Where::dir_name ? head + "(" + sep + "[^/]*)?/.+"
                                             : head + sep + "[^/]*$");
}

std::vector<std::string> matching(const std::vector<std::string>& files,
                                  const std::regex& pattern) {
  std::vector<std::string> out;
  for (const std::string& file : files) {
    if (std::regex_match(file, pattern)) out.push_back(file);
  }
  return out;
}

}  // namespace

std::vector<InputFile> hf_split_files(const fs::path& folder, const std::string& split,
                                      bool is_train) {
  const std::vector<std::string> files = data_files(folder);
  std::vector<std::string> found = matching(files, split_pattern(split, Where::dir_name));
  if (found.empty()) found = matching(files, split_pattern(split, Where::file_name));
  if (found.empty() && is_train) {
    bool named = false;  // does any file name a split?
    for (const auto& group : kSynonyms) {
      named = named || !matching(files, split_pattern(group.front(), Where::dir_name)).empty() ||
              !matching(files, split_pattern(group.front(), Where::file_name)).empty();
    }
    if (!named) found = files;
  }
  std::vector<InputFile> inputs;
  for (const std::string& file : found) {
    const fs::path path = folder / file;
    const std::string extension = path.extension().string();
    inputs.push_back({path, extension == ".csv"     ? InputFormat::csv
                            : extension == ".jsonl" ? InputFormat::jsonl
                                                    : InputFormat::parquet});
  }
  return inputs;
}

}  // namespace autotrain::data
