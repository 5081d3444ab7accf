// metrics.jsonl as the trainer appends to it.
#include "autotrain/train/metrics.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace autotrain::train {
namespace {

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MetricsLog, CutsOffATornLastLineBeforeAppending) {
  testing::TempDir dir;
  const auto path = dir / "metrics.jsonl";
  testing::write_file(path, "{\"step\":4,\"loss\":4.0}\n{\"step\":6,\"lo");  // killed mid-write
  {
    MetricsLog log(path);
    StepMetrics metrics;
    metrics.step = 5;
    metrics.loss = 3.5;
    log.write(metrics);
  }
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["step"], 4);
  EXPECT_EQ(nlohmann::json::parse(lines[1])["step"], 5);
}

TEST(MetricsLog, KeepsACompleteFileAndATornOnlyLine) {
  testing::TempDir dir;
  const auto whole = dir / "whole.jsonl";
  testing::write_file(whole, "{\"step\":1}\n");
  { MetricsLog log(whole); }
  EXPECT_EQ(lines_of(whole), std::vector<std::string>{"{\"step\":1}"});
  const auto torn = dir / "torn.jsonl";
  testing::write_file(torn, "{\"st");
  { MetricsLog log(torn); }
  EXPECT_TRUE(lines_of(torn).empty());
}

}  // namespace
}  // namespace autotrain::train
