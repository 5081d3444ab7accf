#include "autotrain/ckpt/file_digest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "autotrain/ckpt/checksum.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"

namespace autotrain::ckpt {
namespace {

namespace fs = std::filesystem;

// Sum of the terms of `bytes` (zero-padded to whole words), its first word at index `first`.
uint64_t sum_terms(uint64_t first, const unsigned char* bytes, size_t count) {
  uint64_t sums[4] = {0, 0, 0, 0};  // independent chains the compiler can interleave
  const size_t words = count / 8;
  size_t k = 0;
  for (; k + 4 <= words; k += 4) {
    for (size_t lane = 0; lane < 4; ++lane) {
      uint64_t word = 0;
      std::memcpy(&word, bytes + 8 * (k + lane), 8);
      sums[lane] += checksum_term(first + k + lane, word);
    }
  }
  for (; k < words; ++k) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + 8 * k, 8);
    sums[0] += checksum_term(first + k, word);
  }
  if (count % 8 != 0) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + 8 * words, count % 8);
    sums[0] += checksum_term(first + words, word);
  }
  return sums[0] + sums[1] + sums[2] + sums[3];
}

// One file's part of the block sequence: its bytes and where its words start.
struct FileSpan {
  fs::path path;
  uint64_t bytes = 0;
  uint64_t first_word = 0;
};

// This rank's sum over the bytes [begin, end) of `file` (begin a multiple of 8).
uint64_t sum_range(const FileSpan& file, uint64_t begin, uint64_t end, std::vector<uint64_t>& buf) {
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
  AT_CHECK(fd >= 0, file.path.string(), ": cannot open: ", std::strerror(errno));
  uint64_t sum = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(buf.data());
  const uint64_t piece = buf.size() * 8;
  std::string failure;
  for (uint64_t at = begin; at < end && failure.empty();) {
    const size_t want = static_cast<size_t>(std::min(piece, end - at));
    const ssize_t got = ::pread(fd, bytes, want, static_cast<off_t>(at));
    if (got <= 0) {
      failure = got == 0 ? std::string("the file is shorter than it was") : std::strerror(errno);
      break;
    }
    // A short read ends on a word only by chance: keep whole words for the next read.
    const size_t used = static_cast<size_t>(got) == want ? want : static_cast<size_t>(got) / 8 * 8;
    if (used == 0) continue;
    sum += sum_terms(file.first_word + at / 8, bytes, used);
    at += used;
  }
  ::close(fd);
  AT_CHECK(failure.empty(), file.path.string(), ": cannot read bytes [", begin, ", ", end,
           "): ", failure);
  return sum;
}

uint64_t local_sum(const std::vector<FileSpan>& spans, uint64_t block_bytes, int rank,
                   int world_size) {
  std::vector<uint64_t> buf(static_cast<size_t>(std::min<uint64_t>(block_bytes, 4 << 20) / 8));
  uint64_t sum = 0;
  uint64_t block = 0;  // blocks are numbered across the files, each file's first block new
  for (const FileSpan& file : spans) {
    for (uint64_t begin = 0; begin < file.bytes; begin += block_bytes, ++block) {
      if (block % static_cast<uint64_t>(world_size) != static_cast<uint64_t>(rank)) continue;
      sum += sum_range(file, begin, std::min(file.bytes, begin + block_bytes), buf);
    }
  }
  return sum;
}

}  // namespace

uint64_t files_digest(std::span<const fs::path> files, MPI_Comm comm, uint64_t block_bytes) {
  AT_CHECK(block_bytes > 0 && block_bytes % 8 == 0,
           "files_digest: block_bytes must be a positive multiple of 8, got ", block_bytes);
  int rank = 0;
  int world_size = 1;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  AT_MPI_CHECK(MPI_Comm_size(comm, &world_size));
  uint64_t sum = 0;
  std::string failure;
  try {
    std::vector<FileSpan> spans;
    uint64_t words = 0;
    for (const fs::path& path : files) {
      const uint64_t bytes = fs::file_size(path);
      spans.push_back({path, bytes, words});
      words += (bytes + 7) / 8;
    }
    sum = local_sum(spans, block_bytes, rank, world_size);
  } catch (const std::exception& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, comm, "the digest of the weight files");
  allreduce_or_abort(&sum, 1, MPI_UINT64_T, MPI_SUM, comm, "the digest of the weight files");
  return sum;
}

}  // namespace autotrain::ckpt
