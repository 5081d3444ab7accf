// A checkpoint file's room on disk (disk_space.hpp).
#include "disk_space.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::ckpt {
namespace fs = std::filesystem;
namespace {

std::string free_space_note(const fs::path& folder) {
  std::error_code error;
  const fs::space_info space = fs::space(folder, error);
  if (error) return {};
  return cat(", and ", human_bytes(static_cast<double>(space.available)),
             " are free on the file system of ", folder.string());
}

}  // namespace

uint64_t file_bytes_bound(const std::vector<uint64_t>& lengths, const WriteOptions& options) {
  uint64_t bytes = uint64_t{1} << 20;
  for (const uint64_t length : lengths) {
    const uint64_t data = length * sizeof(float);
    bytes +=
        data + (uint64_t{4} << 10) + (data >= options.alignment_threshold ? options.alignment : 0);
  }
  return bytes;
}

void reserve_space(const fs::path& file, uint64_t bytes) {
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  AT_CHECK(fd >= 0, "cannot open ", file.string(), " to reserve its space: ", std::strerror(errno));
  const int code = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(bytes));
  const int saved = code == 0 ? 0 : errno;
  ::close(fd);
  if (saved == 0) return;
  if (saved == ENOSPC || saved == EDQUOT) {
    throw Error(cat("no space left on device: ", file.string(), " needs up to ",
                    human_bytes(static_cast<double>(bytes)), free_space_note(folder),
                    saved == EDQUOT ? " (the disk quota is exhausted)" : "",
                    "; free space or lower save_total_limit. The checkpoints already saved are "
                    "kept"));
  }
  // No fallocate here: compare with the free space, which is what a write would run into.
  std::error_code error;
  const fs::space_info space = fs::space(folder, error);
  if (!error && space.available < bytes) {
    throw Error(cat("no space left on device: ", file.string(), " needs up to ",
                    human_bytes(static_cast<double>(bytes)), free_space_note(folder),
                    "; free space or lower save_total_limit. The checkpoints already saved are "
                    "kept"));
  }
}

}  // namespace autotrain::ckpt
