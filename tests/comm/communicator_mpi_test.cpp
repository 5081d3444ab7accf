// Every collective of the CPU backends (mpi, gloo) against a reference computed here, for every
// dtype, reduction and a spread of sizes (0, 1, odd, not divisible by the world size, MiBs),
// under mpirun with 1..4 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::communicator_mpi_test {
namespace {

constexpr DType kAllDtypes[] = {DType::fp32, DType::bf16, DType::fp16, DType::int32, DType::int64};
// 0, 1, odd, prime (not divisible by 2, 3 or 4), and 512 Ki + 3 elements (2 MiB of fp32, 4 MiB
// of int64).
constexpr size_t kCounts[] = {0, 1, 7, 13, (size_t{1} << 19) + 3};

// Small signed integers: exact in every dtype, and so are their sums over 4 ranks.
double input_value(int rank, size_t i) {
  return static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) - 3);
}

// A host buffer of `count` elements of `dtype`, read and written as doubles.
class TypedBuffer {
 public:
  TypedBuffer(DType dtype, size_t count)
      : dtype_(dtype), count_(count), bytes_(count * dtype_size(dtype) + 1) {}
  void* data() { return bytes_.data(); }
  size_t count() const { return count_; }

  void set(size_t i, double value) {
    std::byte* at = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::fp32:
        store(at, static_cast<float>(value));
        return;
      case DType::bf16:
        store(at, float_to_bf16(static_cast<float>(value)));
        return;
      case DType::fp16:
        store(at, float_to_fp16(static_cast<float>(value)));
        return;
      case DType::int32:
        store(at, static_cast<int32_t>(value));
        return;
      case DType::int64:
        store(at, static_cast<int64_t>(value));
        return;
    }
  }
  double get(size_t i) const {
    const std::byte* at = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DType::fp32:
        return load<float>(at);
      case DType::bf16:
        return bf16_to_float(load<uint16_t>(at));
      case DType::fp16:
        return fp16_to_float(load<uint16_t>(at));
      case DType::int32:
        return load<int32_t>(at);
      case DType::int64:
        return static_cast<double>(load<int64_t>(at));
    }
    return NAN;
  }

 private:
  template <typename T>
  static void store(std::byte* at, T value) {
    std::memcpy(at, &value, sizeof value);
  }
  template <typename T>
  static T load(const std::byte* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
  }
  DType dtype_;
  size_t count_;
  std::vector<std::byte> bytes_;
};

// The reduction of input_value over all ranks, computed without any communication.
double reference(ReduceOp op, int world_size, size_t i) {
  double sum = 0;
  double max = -1e300;
  for (int r = 0; r < world_size; ++r) {
    sum += input_value(r, i);
    max = std::max(max, input_value(r, i));
  }
  switch (op) {
    case ReduceOp::sum:
      return sum;
    case ReduceOp::max:
      return max;
    case ReduceOp::avg:
      return sum / world_size;
  }
  return NAN;
}

// avg divides in fp32 and rounds once more to 16 bits; everything else is exact.
double tolerance(DType dtype, double expected) {
  const double relative = dtype == DType::bf16   ? 1.0 / 128
                          : dtype == DType::fp16 ? 1.0 / 1024
                                                 : 1e-6;
  return std::abs(expected) * relative + 1e-12;
}

std::vector<ReduceOp> reductions(DType dtype) {
  if (dtype == DType::int32 || dtype == DType::int64) return {ReduceOp::sum, ReduceOp::max};
  return {ReduceOp::sum, ReduceOp::avg, ReduceOp::max};
}

// Counts wrong elements so that one failure reports once per case, not a million times.
struct Mismatches {
  size_t wrong = 0;
  size_t first = 0;
  double got = 0;
  double expected = 0;
  void check(size_t i, double value, double want, DType dtype) {
    if (std::abs(value - want) <= tolerance(dtype, want)) return;
    if (wrong++ == 0) {
      first = i;
      got = value;
      expected = want;
    }
  }
};

// Every rank's mismatches, judged on every rank. Only rank 0 prints test results, and rank 0's
// own part can be right while another rank's is wrong (Gloo's halving-doubling reduce-scatter
// left every rank's part at the front of its buffer: right for rank 0 only). Judged per rank,
// such a test printed OK on rank 0 and failed only through the job's exit code.
void expect_no_mismatch_on_any_rank(const Mismatches& mine, const std::string& what) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::array<double, 4> report{static_cast<double>(mine.wrong),
                                     static_cast<double>(mine.first), mine.got, mine.expected};
  std::vector<double> all(report.size() * static_cast<size_t>(size));
  MPI_Allgather(report.data(), static_cast<int>(report.size()), MPI_DOUBLE, all.data(),
                static_cast<int>(report.size()), MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    const double* theirs = all.data() + report.size() * static_cast<size_t>(r);
    EXPECT_EQ(theirs[0], 0.0) << what << ": rank " << r << " has " << theirs[0]
                              << " wrong elements; the first, element " << theirs[1] << ", is "
                              << theirs[2] << ", expected " << theirs[3];
  }
}

#define EXPECT_NO_MISMATCH(m, what)         \
  expect_no_mismatch_on_any_rank((m), [&] { \
    std::ostringstream text;                \
    text << what;                           \
    return text.str();                      \
  }())

class CommunicatorTest : public ::testing::TestWithParam<CommBackend> {
 public:
  static void SetUpTestSuite() {
    for (CommBackend backend : {CommBackend::mpi, CommBackend::gloo}) {
      CommOptions options;
      options.timeout_seconds = 120;
      communicators()[backend] = make_communicator(backend, MPI_COMM_WORLD, options);
    }
  }
  static void TearDownTestSuite() { communicators().clear(); }

 protected:
  Communicator& comm() { return *communicators().at(GetParam()); }
  static std::map<CommBackend, std::unique_ptr<Communicator>>& communicators() {
    static std::map<CommBackend, std::unique_ptr<Communicator>> instances;
    return instances;
  }
};

TEST_P(CommunicatorTest, ReportsRankSizeAndName) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(comm().rank(), rank);
  EXPECT_EQ(comm().size(), size);
  EXPECT_EQ(comm().name(), comm_backend_name(GetParam()));
}

TEST_P(CommunicatorTest, AllreduceMatchesReferenceForEveryDtypeReductionAndSize) {
  for (DType dtype : kAllDtypes) {
    for (ReduceOp op : reductions(dtype)) {
      for (size_t count : kCounts) {
        TypedBuffer buffer(dtype, count);
        for (size_t i = 0; i < count; ++i) buffer.set(i, input_value(comm().rank(), i));
        comm().allreduce(buffer.data(), count, dtype, op);
        Mismatches mismatches;
        for (size_t i = 0; i < count; ++i) {
          mismatches.check(i, buffer.get(i), reference(op, comm().size(), i), dtype);
        }
        EXPECT_NO_MISMATCH(mismatches, dtype_name(dtype)
                                           << " " << reduce_op_name(op) << " count " << count);
      }
    }
  }
}

TEST_P(CommunicatorTest, ReduceScatterLeavesEachRankItsPaddedPart) {
  for (DType dtype : kAllDtypes) {
    for (ReduceOp op : reductions(dtype)) {
      for (size_t count : kCounts) {
        const ShardLayout layout{count, comm().size()};
        TypedBuffer input(dtype, layout.padded_count());
        for (size_t i = 0; i < layout.padded_count(); ++i) {
          input.set(i, i < count ? input_value(comm().rank(), i) : 0.0);
        }
        TypedBuffer output(dtype, layout.part());
        comm().reduce_scatter(input.data(), output.data(), layout.part(), dtype, op);
        Mismatches mismatches;
        const size_t begin = layout.begin(comm().rank());
        for (size_t j = 0; j < layout.part(); ++j) {
          const double want =
              j < layout.valid(comm().rank()) ? reference(op, comm().size(), begin + j) : 0.0;
          mismatches.check(begin + j, output.get(j), want, dtype);
        }
        EXPECT_NO_MISMATCH(mismatches, dtype_name(dtype)
                                           << " " << reduce_op_name(op) << " count " << count);
      }
    }
  }
}

TEST_P(CommunicatorTest, AllgatherAssemblesEveryRanksPartOutOfPlaceAndInPlace) {
  for (DType dtype : kAllDtypes) {
    for (size_t count : kCounts) {
      for (bool in_place : {false, true}) {
        const ShardLayout layout{count, comm().size()};
        const int rank = comm().rank();
        TypedBuffer output(dtype, layout.padded_count());
        TypedBuffer separate(dtype, layout.part());
        TypedBuffer& input = in_place ? output : separate;
        const size_t input_offset = in_place ? layout.begin(rank) : 0;
        for (size_t j = 0; j < layout.part(); ++j) {
          input.set(input_offset + j,
                    j < layout.valid(rank) ? input_value(rank, layout.begin(rank) + j) : 0.0);
        }
        const auto* input_bytes =
            static_cast<std::byte*>(input.data()) + input_offset * dtype_size(dtype);
        comm().allgather(input_bytes, output.data(), layout.part(), dtype);
        Mismatches mismatches;
        for (size_t i = 0; i < layout.padded_count(); ++i) {
          const int owner = static_cast<int>(i / std::max<size_t>(1, layout.part()));
          mismatches.check(i, output.get(i), i < count ? input_value(owner, i) : 0.0, dtype);
        }
        EXPECT_NO_MISMATCH(mismatches, dtype_name(dtype)
                                           << " count " << count << (in_place ? " in place" : ""));
      }
    }
  }
}

TEST_P(CommunicatorTest, BroadcastCopiesTheRootsBufferFromFirstAndLastRank) {
  for (DType dtype : kAllDtypes) {
    for (size_t count : kCounts) {
      for (int root : {0, comm().size() - 1}) {
        TypedBuffer buffer(dtype, count);
        for (size_t i = 0; i < count; ++i) buffer.set(i, input_value(comm().rank(), i));
        comm().broadcast(buffer.data(), count, dtype, root);
        Mismatches mismatches;
        for (size_t i = 0; i < count; ++i)
          mismatches.check(i, buffer.get(i), input_value(root, i), dtype);
        EXPECT_NO_MISMATCH(mismatches, dtype_name(dtype) << " count " << count << " root " << root);
      }
    }
  }
}

TEST_P(CommunicatorTest, AsyncAllreducesOverlapComputeAndManyInFlightAllComplete) {
  constexpr int kInFlight = 64;
  constexpr size_t kCount = 4099;
  std::vector<std::vector<float>> buffers(kInFlight, std::vector<float>(kCount));
  std::vector<CommHandle> handles;
  for (int k = 0; k < kInFlight; ++k) {
    for (size_t i = 0; i < kCount; ++i)
      buffers[k][i] = static_cast<float>(input_value(comm().rank(), i) + k);
    handles.push_back(
        comm().allreduce_async(buffers[k].data(), kCount, DType::fp32, ReduceOp::sum));
  }
  // Compute while the collectives run (the backward pass, in training).
  std::vector<double> work(1 << 16);
  std::iota(work.begin(), work.end(), 0.0);
  const double checksum = std::accumulate(work.begin(), work.end(), 0.0);
  EXPECT_GT(checksum, 0.0);
  // Wait on the last one first: later handles may be waited on before earlier ones.
  handles.back().wait();
  for (auto& handle : handles) handle.wait();
  for (int k = 0; k < kInFlight; ++k) {
    Mismatches mismatches;
    for (size_t i = 0; i < kCount; ++i) {
      mismatches.check(i, buffers[k][i],
                       reference(ReduceOp::sum, comm().size(), i) + k * comm().size(), DType::fp32);
    }
    EXPECT_NO_MISMATCH(mismatches, "collective " << k);
  }
}

// An async collective must progress while the caller computes and makes no communication calls
// (the backward pass, in training), not only once it is waited on: after a pause several times
// longer than the collective takes, waiting must find it (nearly) done. Open MPI's MPI_I*
// collectives failed this: they only progress inside MPI calls.
TEST_P(CommunicatorTest, AsyncAllreduceProgressesWhileTheCallerMakesNoCalls) {
  if (comm().size() == 1) GTEST_SKIP() << "a one-rank allreduce has nothing to progress";
  constexpr size_t kCount = size_t{1} << 21;  // 8 MiB of fp32: many protocol rounds
  std::vector<float> buffer(kCount, 1.0f);
  // The median of three blocking runs: what one allreduce of this size takes here and now.
  std::array<double, 3> blocking{};
  for (double& seconds : blocking) {
    comm().barrier();
    const auto start = std::chrono::steady_clock::now();
    comm().allreduce(buffer.data(), kCount, DType::fp32, ReduceOp::max);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::sort(blocking.begin(), blocking.end());
  const double blocking_seconds = blocking[1];
  comm().barrier();
  CommHandle handle = comm().allreduce_async(buffer.data(), kCount, DType::fp32, ReduceOp::max);
  // Long enough to finish many times over, even on oversubscribed, loaded cores.
  const double pause_seconds = std::max(0.5, 20 * blocking_seconds);
  std::this_thread::sleep_for(std::chrono::duration<double>(pause_seconds));
  const auto start = std::chrono::steady_clock::now();
  handle.wait();
  const double wait_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Judged on the slowest rank, on every rank (only rank 0 prints).
  double worst_share = wait_seconds / blocking_seconds;
  MPI_Allreduce(MPI_IN_PLACE, &worst_share, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_LT(worst_share, 0.5) << "waiting took this share of a blocking allreduce on the slowest "
                                 "rank: the collective did not progress during a pause of "
                              << pause_seconds << " s";
  EXPECT_EQ(buffer[kCount - 1], 1.0f);
}

TEST_P(CommunicatorTest, MixedAsyncOpsAndBarrierCompleteInIssueOrder) {
  std::vector<int64_t> counter(1, comm().rank() + 1);
  std::vector<float> gathered(static_cast<size_t>(comm().size()));
  float mine = static_cast<float>(comm().rank());
  CommHandle reduce = comm().allreduce_async(counter.data(), 1, DType::int64, ReduceOp::sum);
  CommHandle gather = comm().allgather_async(&mine, gathered.data(), 1, DType::fp32);
  CommHandle barrier = comm().barrier_async();
  barrier.wait();
  gather.wait();
  reduce.wait();
  const int n = comm().size();
  EXPECT_EQ(counter[0], static_cast<int64_t>(n) * (n + 1) / 2);
  for (int r = 0; r < n; ++r) EXPECT_EQ(gathered[static_cast<size_t>(r)], static_cast<float>(r));
}

// A blocking call issued while async calls are still queued must run after them on every rank
// (the mpi backend runs blocking calls on the caller's thread when nothing is queued).
TEST_P(CommunicatorTest, BlockingCallAfterQueuedAsyncCallsKeepsIssueOrder) {
  constexpr size_t kCount = 100003;
  std::vector<float> first(kCount, 1.0f);
  std::vector<float> second(kCount, 2.0f);
  std::vector<int32_t> blocking(1, 3);
  CommHandle a = comm().allreduce_async(first.data(), kCount, DType::fp32, ReduceOp::sum);
  CommHandle b = comm().allreduce_async(second.data(), kCount, DType::fp32, ReduceOp::max);
  comm().allreduce(blocking.data(), 1, DType::int32, ReduceOp::sum);
  EXPECT_EQ(blocking[0], 3 * comm().size());
  a.wait();
  b.wait();
  EXPECT_EQ(first[kCount - 1], static_cast<float>(comm().size()));
  EXPECT_EQ(second[kCount - 1], 2.0f);
}

TEST_P(CommunicatorTest, DroppedHandleStillCompletesItsCollective) {
  std::vector<int32_t> value(1, 1);
  { CommHandle dropped = comm().allreduce_async(value.data(), 1, DType::int32, ReduceOp::sum); }
  EXPECT_EQ(value[0], comm().size());
}

TEST_P(CommunicatorTest, RejectsAverageOfIntegers) {
  std::vector<int32_t> value(1, 1);
  try {
    comm().allreduce(value.data(), 1, DType::int32, ReduceOp::avg);
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'avg' needs a floating-point dtype, got int32"),
              std::string::npos)
        << error.what();
  }
}

TEST_P(CommunicatorTest, RejectsBroadcastRootOutsideTheCommunicator) {
  std::vector<float> value(1);
  EXPECT_THROW(comm().broadcast(value.data(), 1, DType::fp32, comm().size()), Error);
}

std::string backend_test_name(const ::testing::TestParamInfo<CommBackend>& backend) {
  return std::string(comm_backend_name(backend.param));
}

INSTANTIATE_TEST_SUITE_P(CpuBackends, CommunicatorTest,
                         ::testing::Values(CommBackend::mpi, CommBackend::gloo), backend_test_name);

}  // namespace
}  // namespace autotrain::communicator_mpi_test
