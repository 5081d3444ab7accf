// Reading a project folder from outside the run: metrics.jsonl (including a resumed run's
// appended lines and a line torn by the writer), the status a login-node user sees, and the
// loss curve SVG.
#include "autotrain/cli/project_report.hpp"

#include <gtest/gtest.h>

#include "../config/expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::cli {
namespace {

using testing::contains;
using testing::error_message;
using testing::TempDir;
using testing::write_file;

// A run of 10 steps stopped after step 6 (checkpoint at 4), resumed at 4 and finished.
constexpr const char* kResumedRun =
    R"({"step":0,"epoch":0,"loss":null,"val_loss":5.5,"lr":0,"tokens_per_s":0,"elapsed_s":0.1,"total_steps":10}
{"step":2,"epoch":0.2,"loss":5.0,"lr":1e-3,"tokens_per_s":1000,"elapsed_s":2,"total_steps":10}
{"step":4,"epoch":0.4,"loss":4.0,"lr":1e-3,"tokens_per_s":1000,"elapsed_s":4,"total_steps":10}
{"step":6,"epoch":0.6,"loss":3.5,"lr":1e-3,"tokens_per_s":1000,"elapsed_s":6,"total_steps":10}
{"step":6,"epoch":0.6,"loss":3.4,"lr":1e-3,"tokens_per_s":2000,"elapsed_s":1.5,"total_steps":10}
{"step":8,"epoch":0.8,"loss":3.0,"val_loss":3.3,"lr":1e-3,"tokens_per_s":2000,"elapsed_s":2.5,"total_steps":10}
)";

TEST(ReadMetrics, KeepsEveryLineAndTreatsNullLossAsMissing) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const auto points = read_metrics(dir / "metrics.jsonl");
  ASSERT_EQ(points.size(), 6u);
  EXPECT_FALSE(points[0].loss);
  EXPECT_DOUBLE_EQ(*points[0].val_loss, 5.5);
  EXPECT_EQ(points[5].total_steps, 10);
}

TEST(ReadMetrics, IgnoresATornLastLineBeingWritten) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", std::string(kResumedRun) + R"({"step":10,"epo)");
  EXPECT_EQ(read_metrics(dir / "metrics.jsonl").size(), 6u);
}

TEST(ReadMetrics, SkipsATornLineThatAResumedRunAppendedTo) {
  // A kill mid-write tore step 6's line; the resumed run's first line was glued onto it.
  TempDir dir;
  write_file(dir / "metrics.jsonl",
             "{\"step\":4,\"loss\":4.0}\n{\"step\":6,\"lo{\"step\":5,\"loss\":3.6}\n"
             "not json\n{\"step\":6,\"loss\":3.4}\n");
  const auto points = read_metrics(dir / "metrics.jsonl");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].step, 4);
  EXPECT_EQ(points[1].step, 6);
}

TEST(LatestPerStep, TheResumedRunReplacesTheInterruptedRunsStep) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const auto curve = latest_per_step(read_metrics(dir / "metrics.jsonl"));
  ASSERT_EQ(curve.size(), 5u);  // steps 0, 2, 4, 6, 8
  EXPECT_EQ(curve[3].step, 6);
  EXPECT_DOUBLE_EQ(*curve[3].loss, 3.4);
}

TEST(ProjectStatus, ReportsProgressRestartsAndEtaOfARunningProject) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const ProjectStatus status = read_project_status(dir.path());
  EXPECT_EQ(status.state, "running or stopped");
  EXPECT_EQ(status.step, 8);
  EXPECT_EQ(status.total_steps, 10);
  EXPECT_EQ(status.restarts, 1);
  ASSERT_TRUE(status.steps_per_s);
  EXPECT_DOUBLE_EQ(*status.steps_per_s, 2.0);  // steps 6 -> 8 in 1 s of the resumed run
  ASSERT_TRUE(status.eta_s);
  EXPECT_DOUBLE_EQ(*status.eta_s, 1.0);
  EXPECT_DOUBLE_EQ(*status.last_loss->loss, 3.0);
  EXPECT_DOUBLE_EQ(*status.last_val->val_loss, 3.3);
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "step        8/10 (80.0%)"));
  EXPECT_TRUE(contains(text, "resumed 1 time(s)"));
  EXPECT_TRUE(contains(text, "checkpoint  none yet"));
}

TEST(ProjectStatus, FinishedWhenTheLastStepIsLoggedAndTheModelExported) {
  TempDir dir;
  write_file(
      dir / "metrics.jsonl",
      std::string(kResumedRun) +
          R"({"step":10,"epoch":1,"loss":2.9,"lr":0,"tokens_per_s":2000,"elapsed_s":3.5,"total_steps":10})"
          "\n");
  write_file(dir / "model.safetensors", "x");
  const ProjectStatus status = read_project_status(dir.path());
  EXPECT_EQ(status.state, "finished");
  EXPECT_FALSE(status.eta_s);
  EXPECT_TRUE(contains(render_status_json(status), R"("state":"finished")"));
}

TEST(ProjectStatus, RejectsAFolderThatIsNotAProject) {
  TempDir dir;
  EXPECT_TRUE(contains(error_message([&] { read_project_status(dir.path()); }),
                       "not an autotrain project folder"));
  EXPECT_TRUE(
      contains(error_message([&] { read_project_status(dir / "missing"); }), "is not a folder"));
}

TEST(LossSvg, DrawsBothCurvesWithAPointPerStep) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const std::string svg =
      render_loss_svg(latest_per_step(read_metrics(dir / "metrics.jsonl")), "run");
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_TRUE(contains(svg, "</svg>\n"));
  const auto train = svg.find("<polyline class=\"train\"");
  ASSERT_NE(train, std::string::npos);
  const std::string points = svg.substr(train, svg.find("/>", train) - train);
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 4);  // steps 2, 4, 6, 8
  EXPECT_TRUE(contains(svg, "<polyline class=\"validation\""));
  EXPECT_TRUE(contains(svg, "validation loss"));
}

TEST(LossSvg, RejectsMetricsWithoutAnyLoss) {
  EXPECT_TRUE(contains(error_message([] { render_loss_svg({MetricsPoint{}}, "run"); }),
                       "no loss values yet"));
}

}  // namespace
}  // namespace autotrain::cli
