// What a failed allocation is reported as at the top of a command.
#include "autotrain/core/memory_usage.hpp"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

namespace autotrain::memory_usage_test {
namespace {

TEST(MemoryUsage, PeakResidentMemoryIsReadFromTheProcess) {
  EXPECT_GT(peak_resident_bytes(), std::size_t{1} << 20);  // a running test holds over 1 MiB
}

TEST(MemoryUsage, BadAllocBecomesOutOfMemoryWithThePeakAndAHint) {
  const std::string message = failure_message(std::bad_alloc());
  EXPECT_EQ(message.rfind("out of memory: ", 0), 0u) << message;
  EXPECT_NE(message.find("peak resident memory at "), std::string::npos) << message;
  EXPECT_NE(message.find("lower batch_size"), std::string::npos) << message;
  EXPECT_NE(message, std::bad_alloc().what());
  // Also its subclass, thrown by a new[] whose size overflows.
  EXPECT_EQ(failure_message(std::bad_array_new_length()).rfind("out of memory: ", 0), 0u);
}

TEST(MemoryUsage, OutOfMemoryNamesThePeakInReadableUnits) {
  EXPECT_NE(out_of_memory_message(std::size_t{3} << 30).find("at 3.00 GiB;"), std::string::npos);
}

TEST(MemoryUsage, OtherErrorsKeepTheirMessage) {
  EXPECT_EQ(failure_message(std::runtime_error("data.csv: no column 'text'")),
            "data.csv: no column 'text'");
}

}  // namespace
}  // namespace autotrain::memory_usage_test
