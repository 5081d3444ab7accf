// metrics.jsonl as the trainer appends to it.
#include "autotrain/train/metrics.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace autotrain::train::metrics_test {
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

TEST(MetricsLog, BracketsARunWithStartAndStopRecordsThatCarryNoLoss) {
  testing::TempDir dir;
  const auto path = dir / "metrics.jsonl";
  const char* saved = std::getenv("SLURM_JOB_ID");
  const std::string saved_job = saved ? saved : "";
  ::setenv("SLURM_JOB_ID", "4242", 1);
  {
    MetricsLog log(path);
    log.write_run_start(5, 10);
    StepMetrics metrics;
    metrics.step = 6;
    metrics.loss = 3.5;
    log.write(metrics);
    log.write_run_stop(7, 10, 2.5, "SIGUSR1");
  }
  ::unsetenv("SLURM_JOB_ID");
  {
    MetricsLog log(path);
    log.write_run_start(7, 10);
    log.write_run_stop(10, 10, 1.25, "");
  }
  if (saved) ::setenv("SLURM_JOB_ID", saved_job.c_str(), 1);
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), 5u);
  const auto start = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(start["event"], "run_start");
  EXPECT_EQ(start["step"], 5);
  EXPECT_EQ(start["total_steps"], 10);
  EXPECT_EQ(start["slurm_job_id"], "4242");
  const auto stop = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(stop["event"], "run_stop");
  EXPECT_EQ(stop["step"], 7);
  EXPECT_EQ(stop["reason"], "preempted");
  EXPECT_EQ(stop["signal"], "SIGUSR1");
  EXPECT_FALSE(nlohmann::json::parse(lines[3]).contains("slurm_job_id"));  // outside Slurm
  const auto completed = nlohmann::json::parse(lines[4]);
  EXPECT_EQ(completed["reason"], "completed");
  EXPECT_FALSE(completed.contains("signal"));
  // Readers that collect losses per step (tests/e2e/*_check.py) pass over the records.
  for (const size_t record : {0u, 2u, 3u, 4u}) {
    const auto line = nlohmann::json::parse(lines[record]);
    EXPECT_FALSE(line.contains("loss") || line.contains("val_loss")) << lines[record];
  }
}

}  // namespace
}  // namespace autotrain::train::metrics_test
