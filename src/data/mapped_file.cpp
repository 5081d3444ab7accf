#include "autotrain/data/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain::data {
namespace {

// Owns a POSIX file descriptor.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

MappedFile::MappedFile(std::filesystem::path path, const char* what) : path_(std::move(path)) {
  const FileDescriptor file(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  AT_CHECK(file.get() >= 0, "cannot open ", what, " ", path_.string(), ": ", std::strerror(errno));
  struct stat info {};
  AT_CHECK(::fstat(file.get(), &info) == 0, "cannot stat ", what, " ", path_.string(), ": ",
           std::strerror(errno));
  bytes_ = static_cast<size_t>(info.st_size);
  if (bytes_ == 0) return;
  mapping_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, file.get(), 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw Error(cat("cannot map ", what, " ", path_.string(), ": ", std::strerror(errno)));
  }
}

MappedFile::~MappedFile() {
  unmap();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MappedFile::unmap() {
  if (mapping_ != nullptr) ::munmap(mapping_, bytes_);
  mapping_ = nullptr;
  bytes_ = 0;
}

}  // namespace autotrain::data
