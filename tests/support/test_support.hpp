#pragma once
// Helpers shared by the tests: fixture paths and self-cleaning temporary folders.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace autotrain::testing {

// <source>/tests/data/<relative>
std::filesystem::path fixture(const std::string& relative);
// <source>/<relative>
std::filesystem::path source_path(const std::string& relative);

// n draws of N(0, scale²) from a generator seeded with `seed`: the kernel tests' inputs, the same
// on every machine for the CPU and the GPU tests.
std::vector<double> random_vec(std::size_t n, std::uint32_t seed, double scale = 1.0);

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

// A folder created by rank 0 and known to every rank of MPI_COMM_WORLD (the ranks of a test share
// this machine's /tmp). Collective: construct and destroy it on every rank; the destructor waits
// for everyone before rank 0 removes it, so nobody reads a folder that is going away.
class SharedTempDir {
 public:
  SharedTempDir();
  ~SharedTempDir();
  SharedTempDir(const SharedTempDir&) = delete;
  SharedTempDir& operator=(const SharedTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::unique_ptr<TempDir> owned_;  // rank 0 only
  std::filesystem::path path_;
};

// The message of the autotrain::Error that `call` throws, or "(no error)" when it throws none.
std::string error_of(const std::function<void()>& call);

void write_file(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);

}  // namespace autotrain::testing
