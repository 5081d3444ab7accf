#include "fuzz_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "autotrain/core/log.hpp"

namespace autotrain::fuzz {
namespace {

struct Scratch {
  std::filesystem::path path;
  Scratch() {
    // Parsers warn about accepted oddities; at millions of inputs that is only noise.
    log::set_level(log::Level::error);
    const char* tmp = std::getenv("TMPDIR");
    path = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
           ("autotrain-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

const std::filesystem::path& scratch() {
  static const Scratch instance;
  return instance.path;
}

std::filesystem::path put(const std::string& name, std::string_view bytes) {
  const auto path = scratch() / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();  // the harness itself failed: not a finding
  return path;
}

std::vector<std::string_view> split_at_nul(std::string_view text, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t nul = text.find('\0');
    if (nul == std::string_view::npos) break;
    parts.push_back(text.substr(0, nul));
    text.remove_prefix(nul + 1);
  }
  parts.push_back(text);
  return parts;
}

}  // namespace autotrain::fuzz
