// NvmeState: optimizer state in a scratch file, streamed block by block (src/zero/nvme_state.hpp).
// Values are a function of (array, element, pass), so every check knows what each float must be.
// The full-disk tests mount a 1 MiB tmpfs and skip where mounting is not permitted.
#include "../../src/zero/nvme_state.hpp"  // internal to the zero layer

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::zero::nvme_state_test {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;

float value(int array, std::size_t element, int pass) {
  return static_cast<float>(array * 1000003 + static_cast<int>(element)) + 0.25f * pass;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Sets every element to value(k, i, pass), checking first that it held value(k, i, pass - 1)
// (pass 0 checks the zeros of a new file). Returns the blocks visited.
std::size_t overwrite(NvmeState& state, int pass, bool write_back = true) {
  std::size_t blocks = 0, next = 0;
  state.for_each_block(
      [&](std::size_t begin, std::size_t count, std::span<float* const> data) {
        EXPECT_EQ(begin, next);
        EXPECT_EQ(data.size(), static_cast<std::size_t>(state.arrays()));
        for (int k = 0; k < state.arrays(); ++k) {
          float* slice = data[static_cast<std::size_t>(k)];
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(slice) % 64, 0u);
          for (std::size_t i = 0; i < count; ++i) {
            const float before = pass == 0 ? 0.0f : value(k, begin + i, pass - 1);
            if (slice[i] != before) {
              ADD_FAILURE() << "array " << k << " element " << begin + i << ": " << slice[i]
                            << ", expected " << before;
              return;
            }
            slice[i] = value(k, begin + i, pass);
          }
        }
        next = begin + count;
        ++blocks;
      },
      write_back);
  EXPECT_EQ(next, state.elements());
  return blocks;
}

class NvmeRoundTrip : public ::testing::TestWithParam<std::tuple<int, IoEngine>> {};

TEST_P(NvmeRoundTrip, KeepsWhatEachPassWroteAcrossBlocksAndAPartialLastBlock) {
  const auto [arrays, engine] = GetParam();
  TempDir dir;
  // 3000 floats = 12000 bytes: each slice is padded to 12288; the last block holds 1000.
  NvmeState state(dir.path(), "state", 10000, arrays, 3000, NvmeIo{engine});
  ASSERT_EQ(state.num_blocks(), 4u);
  EXPECT_EQ(state.file_bytes(), fs::file_size(dir / "state"));
  EXPECT_EQ(state.file_bytes(), static_cast<std::size_t>(arrays) * (3 * 12288 + 4096));
  for (int pass = 0; pass < 3; ++pass) EXPECT_EQ(overwrite(state, pass), 4u) << "pass " << pass;
  std::vector<float> tail(1500);
  state.read(arrays - 1, 8500, tail);
  for (std::size_t i = 0; i < tail.size(); ++i) {
    ASSERT_EQ(tail[i], value(arrays - 1, 8500 + i, 2)) << "element " << 8500 + i;
  }
}

std::string round_trip_name(const ::testing::TestParamInfo<std::tuple<int, IoEngine>>& info) {
  const bool threads = std::get<1>(info.param) == IoEngine::threads;
  return std::to_string(std::get<0>(info.param)) + "_arrays_" + (threads ? "threads" : "automatic");
}

INSTANTIATE_TEST_SUITE_P(ArraysAndEngines, NvmeRoundTrip,
                         ::testing::Combine(::testing::Values(1, 3),
                                            ::testing::Values(IoEngine::automatic,
                                                              IoEngine::threads)),
                         round_trip_name);

TEST(NvmeState, LeavesTheFileUnchangedWithoutWriteBack) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 5000, 2, 2048);
  overwrite(state, 0);
  const std::string before = file_bytes(dir / "state");
  overwrite(state, 1, false);
  EXPECT_EQ(file_bytes(dir / "state"), before);
  overwrite(state, 1);  // still finds pass 0's values
}

TEST(NvmeState, RandomAccessMatchesTheBlocks) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 7000, 3, 1024);
  overwrite(state, 0);
  // Array 1, elements [1000, 3100): the end of block 0, all of block 1, the start of block 3.
  std::vector<float> written(2100);
  for (std::size_t i = 0; i < written.size(); ++i) written[i] = -static_cast<float>(i);
  state.write(1, 1000, written);
  std::vector<float> read(2300);
  state.read(1, 900, read);
  for (std::size_t i = 0; i < read.size(); ++i) {
    const std::size_t element = 900 + i;
    const bool in_range = element >= 1000 && element < 3100;
    ASSERT_EQ(read[i], in_range ? written[element - 1000] : value(1, element, 0)) << element;
  }
  state.for_each_block([&](std::size_t begin, std::size_t count, std::span<float* const> data) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t e = begin + i;
      const float expected = e >= 1000 && e < 3100 ? written[e - 1000] : value(1, e, 0);
      ASSERT_EQ(data[1][i], expected) << e;
      ASSERT_EQ(data[0][i], value(0, e, 0)) << e;
      ASSERT_EQ(data[2][i], value(2, e, 0)) << e;
    }
  });
}

// Blocks of several pages (5000 elements: five pages a slice, the last one part padding): a
// random access moves only the pages its elements lie on, reading a part-written page first.
TEST(NvmeState, RandomAccessWithinPagesKeepsTheRestOfTheirPages) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 12000, 2, 5000);
  overwrite(state, 0);
  struct Write {
    int array;
    std::size_t begin, count;
  };
  const Write writes[] = {
      {1, 1021, 7},     // across the page boundary at element 1024
      {0, 2048, 1024},  // exactly one page: written without a read
      {1, 4990, 10},    // the end of block 0's slice, the padded last page
      {0, 4999, 3},     // across blocks 0 and 1
      {1, 11999, 1},    // the last element, in the short last block
  };
  std::vector<std::vector<float>> expected(2, std::vector<float>(state.elements()));
  for (int k = 0; k < 2; ++k) {
    for (std::size_t e = 0; e < state.elements(); ++e) expected[k][e] = value(k, e, 0);
  }
  for (const Write& w : writes) {
    std::vector<float> in(w.count);
    for (std::size_t i = 0; i < w.count; ++i) in[i] = -1.0f - static_cast<float>(w.begin + i);
    state.write(w.array, w.begin, in);
    std::copy(in.begin(), in.end(), expected[w.array].begin() + static_cast<long>(w.begin));
    std::vector<float> out(w.count + 2);
    const std::size_t from = w.begin - 1;
    state.read(w.array, from,
               std::span<float>(out).first(std::min(out.size(), state.elements() - from)));
    for (std::size_t i = 0; i < out.size() && from + i < state.elements(); ++i) {
      ASSERT_EQ(out[i], expected[w.array][from + i]) << "array " << w.array << " at " << from + i;
    }
  }
  state.for_each_block([&](std::size_t begin, std::size_t count, std::span<float* const> data) {
    for (int k = 0; k < 2; ++k) {
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(data[k][i], expected[k][begin + i]) << "array " << k << " at " << begin + i;
      }
    }
  });
}

// A file of one array in blocks of whole pages (offload_param's shard): its bytes follow each
// other, so pages read and written directly land where the array's elements are.
TEST(NvmeState, PageAccessOfAContiguousFileMatchesTheArray) {
  TempDir dir;
  NvmeState state(dir.path(), "params", 5000, 1, 2048);  // blocks of 8 KiB, a partial last one
  ASSERT_TRUE(state.contiguous());
  EXPECT_FALSE(NvmeState(dir.path(), "three", 5000, 3, 2048).contiguous());
  EXPECT_FALSE(NvmeState(dir.path(), "odd", 5000, 1, 1000).contiguous());
  overwrite(state, 0);
  auto* page = static_cast<float*>(std::aligned_alloc(NvmeState::kAlignment, 3 * 4096));
  ASSERT_NE(page, nullptr);
  const std::span<std::byte> bytes(reinterpret_cast<std::byte*>(page), 3 * 4096);
  state.read_pages(4096, bytes);  // elements [1024, 4096): across blocks 0 and 1
  for (std::size_t i = 0; i < 3 * 1024; ++i) ASSERT_EQ(page[i], value(0, 1024 + i, 0)) << i;
  for (std::size_t i = 0; i < 1024; ++i) page[i] = -1.0f - static_cast<float>(i);
  state.write_pages(3 * 4096, bytes.first(4096));  // elements [3072, 4096)
  std::vector<float> read(5000);
  state.read(0, 0, read);
  for (std::size_t e = 0; e < read.size(); ++e) {
    const bool written = e >= 3072 && e < 4096;
    ASSERT_EQ(read[e], written ? -1.0f - static_cast<float>(e - 3072) : value(0, e, 0)) << e;
  }
  EXPECT_NE(error_of([&] { state.read_pages(100, bytes.first(4096)); }).find("not 4096-byte"),
            std::string::npos);
  EXPECT_NE(error_of([&] { state.read_pages(16384, bytes.first(8192)); }).find("outside the file"),
            std::string::npos);
  std::free(page);
}

TEST(NvmeState, RefusesRangesOutsideTheArrays) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 100, 2, 64);
  std::vector<float> out(10);
  EXPECT_NE(error_of([&] { state.read(0, 95, out); }).find("lie outside the 100"),
            std::string::npos);
  EXPECT_NE(error_of([&] { state.read(2, 0, out); }).find("no array 2"), std::string::npos);
}

TEST(NvmeState, RemovesItsFileWhenDestroyed) {
  TempDir dir;
  {
    NvmeState state(dir.path(), "state", 1000, 1, 256);
    EXPECT_TRUE(fs::exists(dir / "state"));
  }
  EXPECT_FALSE(fs::exists(dir / "state"));
}

TEST(NvmeState, RemovesItsFileWhenAVisitorThrows) {
  TempDir dir;
  std::size_t visited = 0;
  try {
    NvmeState state(dir.path(), "state", 10000, 3, 1000);
    state.for_each_block([&](std::size_t, std::size_t, std::span<float* const>) {
      if (++visited == 4) throw std::runtime_error("visitor failed");
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "visitor failed");
  }
  EXPECT_EQ(visited, 4u);
  EXPECT_FALSE(fs::exists(dir / "state"));
}

TEST(NvmeState, ThrowsAShortReadOfAFileSomeoneTruncated) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 10000, 3, 1000);
  overwrite(state, 0);
  fs::resize_file(dir / "state", 5 * 3 * 4096);  // blocks 0-4 stay, 5-9 are gone
  std::size_t visited = 0;
  const std::string error = error_of([&] {
    state.for_each_block([&](std::size_t, std::size_t, std::span<float* const>) { ++visited; });
  });
  EXPECT_EQ(error, "nvme_path " + dir.path().string() + ": short read of " +
                       (dir / "state").string() +
                       " at byte 61440: 0 of 12288 bytes (was the file truncated by another "
                       "process?)");
  EXPECT_EQ(visited, 5u);
}

TEST(NvmeState, NamesAMissingFolder) {
  TempDir dir;
  const fs::path missing = dir / "no-such-folder";
  EXPECT_EQ(error_of([&] { NvmeState(missing, "state", 100, 1); }),
            "nvme_path " + missing.string() + ": no such folder");
}

TEST(NvmeState, RefusesAFileAnotherStateHolds) {
  TempDir dir;
  NvmeState first(dir.path(), "state", 100, 1);
  const std::string error = error_of([&] { NvmeState(dir.path(), "state", 100, 1); });
  EXPECT_NE(error.find("state is in use by another process"), std::string::npos) << error;
  EXPECT_TRUE(fs::exists(dir / "state"));  // the second one did not remove the first one's file
}

TEST(NvmeState, ReplacesAFileAKilledRunLeft) {
  TempDir dir;
  testing::write_file(dir / "state", std::string(100000, 'x'));
  NvmeState state(dir.path(), "state", 1000, 1, 256);
  EXPECT_EQ(fs::file_size(dir / "state"), state.file_bytes());
  overwrite(state, 0);  // zeros, not the old bytes
}

TEST(NvmeState, SaysHowItReadsAndWrites) {
  TempDir dir;
  NvmeState direct(dir.path(), "direct", 1 << 20, 3);
  EXPECT_EQ(direct.describe().rfind((dir / "direct").string() + ": 12.00 MiB, ", 0), 0u)
      << direct.describe();
  NvmeState buffered(dir.path(), "buffered", 1000, 1, 1000, NvmeIo{IoEngine::threads, false});
  EXPECT_EQ(buffered.describe(), (dir / "buffered").string() +
                                     ": 4.00 KiB, pread/pwrite threads, buffered (O_DIRECT not "
                                     "asked for)");
  overwrite(buffered, 0);
  overwrite(buffered, 1);
}

// What a container's seccomp profile does (Docker's default refuses io_uring): io_uring_setup
// fails with EPERM, in this process and its children from now on.
void refuse_io_uring() {
  sock_filter filter[] = {
      {BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(seccomp_data, nr)},
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, __NR_io_uring_setup},
      {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | EPERM},
      {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW},
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    std::perror("seccomp");
    std::exit(2);
  }
}

TEST(NvmeState, FallsBackToThreadsWhereIoUringIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the filter only in a child of its own
  TempDir dir;
  EXPECT_EXIT(
      {
        refuse_io_uring();
        {
          NvmeState state(dir.path(), "state", 10000, 3, 3000);
          overwrite(state, 0);
          overwrite(state, 1);
          std::fprintf(stderr, "%s\n", state.describe().c_str());
        }
        std::filesystem::remove_all(dir.path());  // std::exit skips the child's destructors
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0),
      "pread/pwrite threads \\(io_uring unavailable: io_uring_queue_init: Operation not "
      "permitted\\), O_DIRECT");
}

TEST(NvmeState, OffersAlignedBuffersOfABlockOfEveryArray) {
  TempDir dir;
  NvmeState state(dir.path(), "state", 100000, 3, 5000);
  const auto buffers = state.buffers();
  ASSERT_EQ(buffers.size(), 3u);
  std::size_t total = 0;
  for (const auto& buffer : buffers) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 4096, 0u);
    EXPECT_EQ(buffer.size(), 3u * 20480);
    total += buffer.size();
  }
  EXPECT_EQ(state.host_bytes(), total);
}

TEST(NvmeRankFolder, GivesEachRankAFolderOfItsOwn) {
  TempDir dir;
  EXPECT_EQ(nvme_rank_folder((dir / "plain").string(), 3), dir / "plain");
  EXPECT_FALSE(fs::exists(dir / "plain"));
  EXPECT_EQ(nvme_rank_folder((dir / "rank%r").string(), 3), dir / "rank3");
  EXPECT_TRUE(fs::is_directory(dir / "rank3"));
  EXPECT_NE(error_of([&] {
              nvme_rank_folder((dir / "missing/rank%r").string(), 0);
            }).find("its parent must exist"),
            std::string::npos);
}

// A 1 MiB tmpfs at a fresh folder, unmounted when it goes; mounted() is false where this
// process may not mount (not root, or a container without CAP_SYS_ADMIN).
class SmallTmpfs {
 public:
  SmallTmpfs() : path_(dir_ / "small") {
    fs::create_directory(path_);
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=1m") == 0;
    if (!mounted_) why_not_ = std::strerror(errno);
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why_not() const { return why_not_; }
  const fs::path& path() const { return path_; }

 private:
  TempDir dir_;
  fs::path path_;
  bool mounted_ = false;
  std::string why_not_;
};

TEST(NvmeState, RefusesAStateLargerThanTheFreeSpace) {
  SmallTmpfs small;
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << small.why_not();
  const std::string error = error_of([&] { NvmeState(small.path(), "state", 1 << 20, 1); });
  EXPECT_EQ(error.rfind("nvme_path " + small.path().string() +
                            ": the optimizer state of this rank needs 4194304 bytes (4.00 MiB) but "
                            "the file system has ",
                        0),
            0u)
      << error;
  EXPECT_TRUE(fs::is_empty(small.path()));
}

TEST(NvmeState, NamesTheFolderWhenTheDiskFillsUp) {
  SmallTmpfs small;
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << small.why_not();
  NvmeIo io;
  io.check_free_space = false;  // meet the full disk in the writes
  const std::string error =
      error_of([&] { NvmeState(small.path(), "state", 1 << 20, 1, 1 << 16, io); });
  const std::string expected =
      "nvme_path " + small.path().string() + ": no space left on device after ";
  EXPECT_EQ(error.rfind(expected, 0), 0u) << error;
  EXPECT_NE(error.find(" of 4194304 bytes; the optimizer state of this rank needs 4194304 bytes"),
            std::string::npos)
      << error;
  EXPECT_TRUE(fs::is_empty(small.path()));
}

}  // namespace
}  // namespace autotrain::zero::nvme_state_test
