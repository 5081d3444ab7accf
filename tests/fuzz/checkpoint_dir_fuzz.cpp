// A checkpoint folder's `latest` NUL `commits` NUL file names to create (one per line): the
// order a resume tries must name only checkpoints inside the folder.
#include <filesystem>
#include <string>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/core/strings.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_at_nul(fuzz::as_text(data, size), 3);
  const auto folder = fuzz::scratch() / "checkpoints";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  fuzz::put("checkpoints/latest", parts[0]);
  if (parts.size() > 1) fuzz::put("checkpoints/commits", parts[1]);
  if (parts.size() > 2) {
    for (const auto& name : split(parts[2], '\n')) {
      // Only plain names the file system takes: the harness must not write outside its folder.
      if (name.empty() || name.size() > 100 ||
          name.find_first_of(std::string("/\0", 2)) != std::string::npos || name == "." ||
          name == "..") {
        continue;
      }
      fuzz::put("checkpoints/" + name, "");
    }
  }
  fuzz::expect_error_or_success([&] {
    const ckpt::CheckpointDir dir(folder);
    const auto inside = [&](const std::filesystem::path& path) {
      if (path.parent_path() != folder) __builtin_trap();  // a resume that leaves the folder
    };
    if (const auto latest = dir.latest()) inside(*latest);
    for (const auto& path : dir.newest_first()) inside(path);
    (void)dir.commits();
    for (const auto& entry : dir.list()) inside(entry.path);
  });
  return 0;
}
