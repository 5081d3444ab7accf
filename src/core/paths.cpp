#include "autotrain/core/paths.hpp"

#include <cstdlib>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain {

std::filesystem::path executable_path() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path{} : path;
}

std::filesystem::path data_dir() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("AUTOTRAIN_DATA_DIR"); env && *env)
    candidates.emplace_back(env);
  if (const auto exe = executable_path(); !exe.empty()) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "autotrain" / "data");
  }
  candidates.emplace_back(std::filesystem::path(AUTOTRAIN_SOURCE_DIR) / "data");
  std::vector<std::string> tried;
  for (const auto& candidate : candidates) {
    if (std::filesystem::exists(candidate / "tinyshakespeare.txt")) return candidate;
    tried.push_back(candidate.string());
  }
  throw Error(cat("cannot find autotrain's data folder (looked in ", join(tried, ", "),
                  "); set AUTOTRAIN_DATA_DIR to the folder holding tinyshakespeare.txt and gpt2/"));
}

std::string version() {
  return AUTOTRAIN_VERSION;
}

}  // namespace autotrain
