// Device binding and CPU-list formatting: pure functions.
#include "autotrain/launch/device.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/launch/affinity.hpp"

namespace autotrain::device_test {
namespace {

DeviceRequest request(int local_rank, int local_world_size, int visible_gpus, bool want_gpu) {
  return {.local_rank = local_rank,
          .local_world_size = local_world_size,
          .visible_gpus = visible_gpus,
          .want_gpu = want_gpu,
          .hostname = "node7"};
}

TEST(ChooseDevice, NoGpuMeansCpu) {
  EXPECT_EQ(choose_device(request(0, 2, 0, false)), -1);
}

TEST(ChooseDevice, LocalRankPicksAmongVisibleGpus) {
  EXPECT_EQ(choose_device(request(0, 4, 4, true)), 0);
  EXPECT_EQ(choose_device(request(3, 4, 4, true)), 3);
  EXPECT_EQ(choose_device(request(1, 2, 8, true)), 1);
}

TEST(ChooseDevice, PerRankVisibilityUsesTheFirstVisibleGpu) {
  DeviceRequest r = request(3, 4, 1, true);
  r.per_rank_visibility = true;
  EXPECT_EQ(choose_device(r), 0);
}

TEST(ChooseDevice, TooFewGpusFallsBackToCpuWhenNoGpuIsRequired) {
  EXPECT_EQ(choose_device(request(0, 4, 2, false)), -1);
}

TEST(ChooseDevice, TooFewGpusForAGpuCommunicatorSaysHowToFixIt) {
  DeviceRequest r = request(2, 4, 2, true);
  r.cuda_visible_devices = "0,1";
  try {
    choose_device(r);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(
        message.find("4 ranks on this node but only 2 GPU(s) visible (CUDA_VISIBLE_DEVICES=0,1)"),
        std::string::npos)
        << message;
    EXPECT_NE(message.find("--ntasks-per-node=2"), std::string::npos) << message;
    EXPECT_NE(message.find("node7"), std::string::npos) << message;
  }
}

TEST(ChooseDevice, GpuCommunicatorWithoutGpuIsAnError) {
  EXPECT_THROW(choose_device(request(0, 1, 0, true)), Error);
}

TEST(CpuList, FormatsRunsCompactly) {
  const std::vector<int> cpus = {0, 1, 2, 5, 7, 8};
  EXPECT_EQ(format_cpu_list(cpus), "0-2,5,7-8");
  EXPECT_EQ(format_cpu_list(std::vector<int>{3}), "3");
  EXPECT_EQ(format_cpu_list(std::vector<int>{}), "");
}

TEST(CpuList, ThisProcessMayRunSomewhere) {
  EXPECT_FALSE(cpu_affinity().empty());
}

}  // namespace
}  // namespace autotrain::device_test
