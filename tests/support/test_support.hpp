#pragma once
// Helpers shared by the tests: fixture paths and self-cleaning temporary folders.
#include <filesystem>
#include <string>

namespace autotrain::testing {

// <source>/tests/data/<relative>
std::filesystem::path fixture(const std::string& relative);
// <source>/<relative>
std::filesystem::path source_path(const std::string& relative);

// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

}  // namespace autotrain::testing
