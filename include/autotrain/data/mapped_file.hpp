#pragma once
// A whole file mapped read-only into memory (token shards, pair indexes): the pages are read
// when touched and shared by every process on the node that maps the same file.
#include <cstddef>
#include <filesystem>

namespace autotrain::data {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path`; `what` names the file in errors ("shard", "pair index"). An empty file maps to
  // no bytes.
  MappedFile(std::filesystem::path path, const char* what);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return static_cast<const std::byte*>(mapping_); }
  size_t size() const { return bytes_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void unmap();

  std::filesystem::path path_;
  void* mapping_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace autotrain::data
