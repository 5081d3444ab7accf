// The warning for a node whose ranks run more OpenMP threads than it has cores while the threads
// spin (train::oversubscription_warning; the figures are in docs/benchmarks.md).
#include <gtest/gtest.h>

#include <string>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train::oversubscription_test {
namespace {

TEST(Oversubscription, WarnsWhenRanksTimesThreadsExceedTheCoresAndThreadsSpin) {
  const std::string unset = oversubscription_warning(2, 2, 2, nullptr);
  EXPECT_NE(unset.find("2 rank(s) × 2 thread(s) = 4 OpenMP threads on this node's 2 core(s)"),
            std::string::npos)
      << unset;
  EXPECT_NE(unset.find("OMP_WAIT_POLICY unset"), std::string::npos) << unset;
  EXPECT_NE(unset.find("set OMP_WAIT_POLICY=passive"), std::string::npos) << unset;
  EXPECT_NE(oversubscription_warning(4, 8, 16, "ACTIVE").find("OMP_WAIT_POLICY ACTIVE"),
            std::string::npos);
}

TEST(Oversubscription, StaysQuietWithinTheCoresOrWithPassiveThreads) {
  EXPECT_EQ(oversubscription_warning(2, 1, 2, nullptr), "");
  EXPECT_EQ(oversubscription_warning(4, 1, 2, nullptr), "");  // mpirun --oversubscribe, 1 thread
  EXPECT_EQ(oversubscription_warning(8, 16, 128, "active"), "");
  EXPECT_EQ(oversubscription_warning(2, 2, 2, "passive"), "");
  EXPECT_EQ(oversubscription_warning(2, 2, 2, "PASSIVE"), "");
}

}  // namespace
}  // namespace autotrain::train::oversubscription_test
