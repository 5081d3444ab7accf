// NvmeState (nvme_state.hpp): the scratch file's creation, its block pipeline and its random
// access. Every failure names nvme_path and what was expected of it.
#include "nvme_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::zero {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

std::size_t ceil_div(std::size_t n, std::size_t by) {
  return (n + by - 1) / by;
}

}  // namespace

NvmeState::ScratchFile::~ScratchFile() {
  if (fd < 0) return;
  // Removed while still locked, so that a process waiting for the lock never loses its file.
  std::error_code error;
  std::filesystem::remove(path, error);
  if (error) log::warn("cannot remove the scratch file ", path.string(), ": ", error.message());
  ::close(fd);
}

void NvmeState::FreeBytes::operator()(std::byte* p) const {
  std::free(p);
}

NvmeState::NvmeState(const std::filesystem::path& folder, std::string file_name,
                     std::size_t elements, int arrays, std::size_t block_elements, NvmeIo io)
    : folder_(folder),
      path_(folder / file_name),
      elements_(elements),
      block_elements_(block_elements),
      num_blocks_(block_elements == 0 ? 0 : ceil_div(elements, block_elements)),
      arrays_(arrays),
      contents_(io.contents) {
  AT_CHECK(arrays >= 1, "NvmeState: at least one array, not ", arrays);
  AT_CHECK(block_elements >= 1, "NvmeState: blocks of at least one element");
  AT_CHECK(!file_name.empty() && file_name.find('/') == std::string::npos,
           "NvmeState: the file name '", file_name, "' must be a plain name");
  if (num_blocks_ > 0) {
    file_bytes_ = block_offset(num_blocks_ - 1) +
                  static_cast<std::size_t>(arrays_) * slice_bytes(num_blocks_ - 1);
  }
  buffer_bytes_ = num_blocks_ > 0 ? static_cast<std::size_t>(arrays_) * slice_bytes(0) : kAlignment;

  std::error_code error;
  const auto status = std::filesystem::status(folder_, error);
  if (!std::filesystem::exists(status)) {
    const bool missing = !error || error == std::errc::no_such_file_or_directory;
    throw Error(cat("nvme_path ", folder_.string(), ": ",
                    missing ? std::string("no such folder") : error.message()));
  }
  if (!std::filesystem::is_directory(status)) {
    throw Error(cat("nvme_path ", folder_.string(), ": not a folder"));
  }
  views_.resize(static_cast<std::size_t>(arrays_));
  open_file(io.direct);
  if (io.check_free_space) check_free_space();
  host_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, kBuffers * buffer_bytes_)));
  if (host_ == nullptr) throw std::bad_alloc();
  io_ = std::make_unique<AsyncFile>(file_.fd, io.engine, kBuffers);
  fill_with_zeros();
}

NvmeState::~NvmeState() = default;

std::size_t NvmeState::block_count(std::size_t block) const {
  return std::min(block_elements_, elements_ - block_begin(block));
}

std::size_t NvmeState::slice_bytes(std::size_t block) const {
  return round_up(block_count(block) * sizeof(float), kAlignment);
}

// Every block before `block` is full.
std::uint64_t NvmeState::block_offset(std::size_t block) const {
  return block * static_cast<std::uint64_t>(arrays_) *
         round_up(block_elements_ * sizeof(float), kAlignment);
}

// Opens (or reopens what a killed run left) and locks the file; only a file this rank locked is
// removed when it goes, so a second job on the same path never deletes the first one's.
void NvmeState::open_file(bool direct) {
  const int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  int fd = direct ? ::open(path_.c_str(), flags | O_DIRECT, 0600) : -1;
  if (fd >= 0) {
    direct_ = true;
  } else if (!direct || errno == EINVAL) {
    buffered_reason_ = direct ? "the file system refuses O_DIRECT" : "O_DIRECT not asked for";
    fd = ::open(path_.c_str(), flags, 0600);
  }
  if (fd < 0) {
    const int code = errno;
    const char* hint = code == EACCES || code == EPERM || code == EROFS
                           ? "; the folder must be writable by every rank"
                           : "";
    throw Error(cat("nvme_path ", folder_.string(), ": cannot create ", path_.filename().string(),
                    ": ", std::strerror(code), hint));
  }
  // Only a lock another process holds refuses the file; a file system without locks (an NFS
  // mount without its lock daemon) does not.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    const int code = errno;
    ::close(fd);
    throw Error(cat("nvme_path ", folder_.string(), ": ", path_.filename().string(),
                    " is in use by another process (", std::strerror(code),
                    "): another job on this node with the same nvme_path? Give each its own "
                    "folder"));
  }
  file_.path = path_;
  file_.fd = fd;
  if (::ftruncate(fd, 0) != 0) {
    throw Error(cat("nvme_path ", folder_.string(), ": cannot truncate ", path_.string(), ": ",
                    std::strerror(errno)));
  }
}

void NvmeState::check_free_space() const {
  struct statvfs fs {};
  if (::statvfs(folder_.c_str(), &fs) != 0) return;  // the fill will tell
  const auto free = static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= file_bytes_) return;
  throw Error(cat("nvme_path ", folder_.string(), ": ", contents_, " of this rank needs ",
                  file_bytes_, " bytes (", human_bytes(static_cast<double>(file_bytes_)),
                  ") but the file system has ", free, " bytes (",
                  human_bytes(static_cast<double>(free)), ") free"));
}

// Writes the zeros through the same engine as the steps, so that a full disk or a file system
// that refuses O_DIRECT writes is met here, before training starts.
void NvmeState::fill_with_zeros() {
  std::memset(buffer(0), 0, buffer_bytes_);
  Transfer failure = write_zeros();
  if (!failure.ok() && failure.error == EINVAL && direct_) {
    use_buffered_io("the file system refuses O_DIRECT writes");
    failure = write_zeros();
  }
  check(failure, "writing");
  if (!direct_ && ::fdatasync(file_.fd) != 0) {  // buffered: a full disk may show only here
    const int code = errno;
    check(Transfer{true, 0, file_bytes_, 0, code}, "flushing");
  }
}

// The file's bytes from buffer 0 (all zeros), kBuffers writes in flight; the first failure in
// file order, after the others ended (an ok Transfer when none failed).
Transfer NvmeState::write_zeros() {
  std::array<AsyncFile::Ticket, kBuffers> pending{};  // in submission order, oldest first
  std::size_t count = 0;
  std::uint64_t offset = 0;
  while (offset < file_bytes_ || count > 0) {
    if (offset < file_bytes_ && count < pending.size()) {
      const std::size_t bytes = std::min<std::uint64_t>(buffer_bytes_, file_bytes_ - offset);
      pending[count++] = io_->write({buffer(0), bytes}, offset);
      offset += bytes;
      continue;
    }
    const Transfer done = io_->wait(pending[0]);
    std::rotate(pending.begin(), pending.begin() + 1, pending.begin() + count);
    --count;
    if (!done.ok()) {
      io_->drain();
      return done;
    }
  }
  return Transfer{};
}

void NvmeState::use_buffered_io(const char* reason) {
  const int flags = ::fcntl(file_.fd, F_GETFL);
  if (flags < 0 || ::fcntl(file_.fd, F_SETFL, flags & ~O_DIRECT) != 0) {
    throw Error(cat("nvme_path ", folder_.string(), ": cannot turn O_DIRECT off for ",
                    path_.string(), " (", reason, "): ", std::strerror(errno)));
  }
  direct_ = false;
  buffered_reason_ = reason;
}

// Throws the Error a failed transfer means to the user; returns when it did not fail.
void NvmeState::check(const Transfer& transfer, const char* what) const {
  if (transfer.ok()) return;
  const std::string where = cat("nvme_path ", folder_.string(), ": ");
  const std::uint64_t reached = transfer.offset + transfer.done;
  if (transfer.error == ENOSPC || transfer.error == EDQUOT) {
    throw Error(cat(where,
                    transfer.error == ENOSPC ? "no space left on device" : "disk quota exceeded",
                    " after ", reached, " of ", file_bytes_, " bytes; ", contents_,
                    " of this rank needs ", file_bytes_, " bytes (",
                    human_bytes(static_cast<double>(file_bytes_)), ") in ", path_.string()));
  }
  if (transfer.error != 0) {
    throw Error(cat(where, what, " ", path_.string(), " at byte ", reached,
                    " failed: ", std::strerror(transfer.error)));
  }
  throw Error(cat(where, "short ", transfer.write ? "write" : "read", " of ", path_.string(),
                  " at byte ", transfer.offset, ": ", transfer.done, " of ", transfer.requested,
                  " bytes (was the file truncated by another process?)"));
}

void NvmeState::for_each_block(const BlockVisitor& visit, bool write_back) {
  // Block b lives in buffer b % kBuffers. Before block b+1 is read into its buffer, the write
  // of block b-2 from that buffer must be over; so while visit runs on block b, the read of b+1
  // and the write of b-1 are in flight.
  std::array<AsyncFile::Ticket, kBuffers> reads{}, writes{};  // per buffer; 0: none
  const auto block_bytes = [this](std::size_t b) { return arrays_ * slice_bytes(b); };
  try {
    if (num_blocks_ > 0) reads[0] = io_->read({buffer(0), block_bytes(0)}, block_offset(0));
    for (std::size_t b = 0; b < num_blocks_; ++b) {
      const int here = static_cast<int>(b % kBuffers), next = static_cast<int>((b + 1) % kBuffers);
      check(io_->wait(std::exchange(reads[here], 0)), "reading");
      if (b + 1 < num_blocks_) {
        if (writes[next] != 0) check(io_->wait(std::exchange(writes[next], 0)), "writing");
        reads[next] = io_->read({buffer(next), block_bytes(b + 1)}, block_offset(b + 1));
      }
      for (int k = 0; k < arrays_; ++k) {
        views_[static_cast<std::size_t>(k)] =
            reinterpret_cast<float*>(buffer(here) + k * slice_bytes(b));
      }
      visit(block_begin(b), block_count(b), views_);
      if (write_back) writes[here] = io_->write({buffer(here), block_bytes(b)}, block_offset(b));
    }
    for (AsyncFile::Ticket& write : writes) {
      if (write != 0) check(io_->wait(std::exchange(write, 0)), "writing");
    }
  } catch (...) {
    io_->drain();
    throw;
  }
}

// Calls `run(block, first, count, done)` for each block's part of elements [begin, begin + n):
// `count` elements from the block's element `first`, `done` elements of the range before them.
template <typename Run>
void NvmeState::for_each_run(int array, std::size_t begin, std::size_t n, Run&& run) const {
  AT_CHECK(array >= 0 && array < arrays_, "NvmeState: no array ", array, " of ", arrays_);
  AT_CHECK(begin <= elements_ && n <= elements_ - begin, "NvmeState: elements [", begin, ", ",
           begin + n, ") lie outside the ", elements_, " of each array");
  for (std::size_t done = 0; done < n;) {
    const std::size_t block = (begin + done) / block_elements_;
    const std::size_t first = begin + done - block_begin(block);
    const std::size_t count = std::min(n - done, block_count(block) - first);
    run(block, first, count, done);
    done += count;
  }
}

std::uint64_t NvmeState::slice_offset(int array, std::size_t block) const {
  return block_offset(block) + static_cast<std::uint64_t>(array) * slice_bytes(block);
}

// The pages of block `b`'s slice of `array` that hold its elements [first, first + count): the
// slices start on a page, so only the pages the elements touch are moved.
struct NvmeState::Pages {
  std::uint64_t offset = 0;  // in the file
  std::size_t bytes = 0;
  std::size_t skip = 0;  // bytes from the first page's start to element `first`
  bool exact = false;    // the elements fill the pages
};

NvmeState::Pages NvmeState::pages(int array, std::size_t b, std::size_t first,
                                  std::size_t count) const {
  const std::size_t from = first * sizeof(float);
  const std::size_t to = (first + count) * sizeof(float);
  const std::size_t begin = from / kAlignment * kAlignment;
  const std::size_t end = std::min((to + kAlignment - 1) / kAlignment * kAlignment, slice_bytes(b));
  return {slice_offset(array, b) + begin, end - begin, from - begin, from == begin && to == end};
}

void NvmeState::read(int array, std::size_t begin, std::span<float> out) {
  for_each_run(array, begin, out.size(),
               [&](std::size_t b, std::size_t first, std::size_t count, std::size_t done) {
                 const Pages at = pages(array, b, first, count);
                 check(io_->wait(io_->read({buffer(0), at.bytes}, at.offset)), "reading");
                 const auto* values = reinterpret_cast<const float*>(buffer(0) + at.skip);
                 std::copy_n(values, count, out.begin() + static_cast<std::ptrdiff_t>(done));
               });
}

// Pages written only in part are read first, so that their other elements (and the slice's
// zero padding) stay.
void NvmeState::write(int array, std::size_t begin, std::span<const float> in) {
  for_each_run(array, begin, in.size(),
               [&](std::size_t b, std::size_t first, std::size_t count, std::size_t done) {
                 const Pages at = pages(array, b, first, count);
                 const std::span<std::byte> bytes{buffer(0), at.bytes};
                 if (!at.exact) check(io_->wait(io_->read(bytes, at.offset)), "reading");
                 auto* values = reinterpret_cast<float*>(buffer(0) + at.skip);
                 std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(done), count, values);
                 check(io_->wait(io_->write(bytes, at.offset)), "writing");
               });
}

bool NvmeState::contiguous() const {
  return arrays_ == 1 && block_elements_ * sizeof(float) % kAlignment == 0;
}

namespace {

void check_pages(std::uint64_t offset, std::size_t size, const void* buffer, std::size_t file) {
  constexpr std::size_t kPage = NvmeState::kAlignment;
  AT_CHECK(offset % kPage == 0 && size % kPage == 0 &&
               reinterpret_cast<std::uintptr_t>(buffer) % kPage == 0,
           "internal: NvmeState page access at ", offset, " of ", size,
           " bytes is not 4096-byte aligned");
  AT_CHECK(offset <= file && size <= file - offset, "internal: NvmeState bytes [", offset, ", ",
           offset + size, ") lie outside the file's ", file);
}

}  // namespace

void NvmeState::read_pages(std::uint64_t offset, std::span<std::byte> bytes) {
  AT_CHECK(contiguous(), "internal: NvmeState page access to a file of ", arrays_, " arrays");
  check_pages(offset, bytes.size(), bytes.data(), file_bytes_);
  check(io_->wait(io_->read(bytes, offset)), "reading");
}

void NvmeState::write_pages(std::uint64_t offset, std::span<const std::byte> bytes) {
  AT_CHECK(contiguous(), "internal: NvmeState page access to a file of ", arrays_, " arrays");
  check_pages(offset, bytes.size(), bytes.data(), file_bytes_);
  check(io_->wait(io_->write(bytes, offset)), "writing");
}

std::vector<std::span<std::byte>> NvmeState::buffers() {
  std::vector<std::span<std::byte>> spans;
  for (int i = 0; i < kBuffers; ++i) spans.emplace_back(buffer(i), buffer_bytes_);
  return spans;
}

std::string NvmeState::describe() const {
  return cat(path_.string(), ": ", human_bytes(static_cast<double>(file_bytes_)), ", ",
             io_->engine_name(), ", ",
             direct_ ? std::string("O_DIRECT") : cat("buffered (", buffered_reason_, ")"));
}

}  // namespace autotrain::zero
