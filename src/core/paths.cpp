#include "autotrain/core/paths.hpp"

#include <elf.h>
#include <link.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

namespace {

// The NT_GNU_BUILD_ID note of the main program, as hex, or "" when it has none.
int find_build_id(dl_phdr_info* info, size_t, void* out) {
  auto& id = *static_cast<std::string*>(out);
  for (int i = 0; i < info->dlpi_phnum && id.empty(); ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
    const unsigned char* end = at + segment.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
      const unsigned char* name = at + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        static constexpr char kHex[] = "0123456789abcdef";
        for (unsigned k = 0; k < note->n_descsz; ++k) {
          id += kHex[desc[k] >> 4];
          id += kHex[desc[k] & 15];
        }
        break;
      }
      at = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the first object is the main program
}

}  // namespace

std::string build_id() {
  std::string id;
  dl_iterate_phdr(find_build_id, &id);
  return id.empty() ? version() : cat(version(), "+", id);
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::string tmp = path.string() + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "w");
  AT_CHECK(file != nullptr, "cannot write ", tmp, ": ", std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  AT_CHECK(std::fclose(file) == 0 && ok, "cannot write ", tmp, ": ", std::strerror(errno));
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  AT_CHECK(!error, "cannot rename ", tmp, " to ", path.string(), ": ", error.message());
}

}  // namespace autotrain
