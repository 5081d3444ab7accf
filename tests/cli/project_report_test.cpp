// Reading a project folder from outside the run: metrics.jsonl (including a resumed run's
// appended lines, the run records and a line torn by the writer), the Slurm job's state (through
// fake squeue/sacct scripts in PATH), the status a login-node user sees, and the loss curve SVG.
#include "autotrain/cli/project_report.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "../config/expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::cli::project_report_test {
namespace {

using testing::contains;
using testing::error_message;
using testing::TempDir;
using testing::write_file;

// A run of 10 steps stopped after step 6 (checkpoint at 4), resumed and still running, written
// before the run records: the resume shows only as the elapsed time going backwards.
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
  const auto points = read_metrics(dir / "metrics.jsonl").points;
  ASSERT_EQ(points.size(), 6u);
  EXPECT_FALSE(points[0].loss);
  EXPECT_DOUBLE_EQ(*points[0].val_loss, 5.5);
  EXPECT_EQ(points[5].total_steps, 10);
}

TEST(ReadMetrics, IgnoresATornLastLineBeingWritten) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", std::string(kResumedRun) + R"({"step":10,"epo)");
  EXPECT_EQ(read_metrics(dir / "metrics.jsonl").points.size(), 6u);
}

TEST(ReadMetrics, SkipsATornLineThatAResumedRunAppendedTo) {
  // A kill mid-write tore step 6's line; the resumed run's first line was glued onto it.
  TempDir dir;
  write_file(dir / "metrics.jsonl",
             "{\"step\":4,\"loss\":4.0}\n{\"step\":6,\"lo{\"step\":5,\"loss\":3.6}\n"
             "not json\n{\"step\":6,\"loss\":3.4}\n");
  const auto points = read_metrics(dir / "metrics.jsonl").points;
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].step, 4);
  EXPECT_EQ(points[1].step, 6);
}

TEST(LatestPerStep, TheResumedRunReplacesTheInterruptedRunsStep) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const auto curve = latest_per_step(read_metrics(dir / "metrics.jsonl").points);
  ASSERT_EQ(curve.size(), 5u);  // steps 0, 2, 4, 6, 8
  EXPECT_EQ(curve[3].step, 6);
  EXPECT_DOUBLE_EQ(*curve[3].loss, 3.4);
}

// A run of 10 steps written with the run records: the first run (Slurm job 123) stopped by
// SIGUSR1 after step 5 with a checkpoint of step 5; the requeued run resumed at 5. Its first
// line's elapsed time (a slow first step) exceeds the first run's, so only the run_start record
// tells the runs apart.
constexpr const char* kRecordedRuns =
    R"({"event":"run_start","step":0,"total_steps":10,"slurm_job_id":"123"}
{"step":0,"epoch":0,"loss":null,"val_loss":5.5,"lr":0,"elapsed_s":0,"total_steps":10}
{"step":2,"epoch":0.2,"loss":5.0,"lr":1e-3,"tokens_per_s":1000,"elapsed_s":2,"total_steps":10}
{"step":4,"epoch":0.4,"loss":4.0,"lr":8e-4,"tokens_per_s":1000,"elapsed_s":4,"total_steps":10}
{"event":"run_stop","step":5,"total_steps":10,"elapsed_s":5.2,"reason":"preempted","signal":"SIGUSR1"}
{"event":"run_start","step":5,"total_steps":10,"slurm_job_id":"123"}
{"step":6,"epoch":0.6,"loss":3.5,"lr":6e-4,"tokens_per_s":500,"elapsed_s":10,"total_steps":10}
{"step":8,"epoch":0.8,"loss":3.0,"val_loss":3.3,"lr":4e-4,"tokens_per_s":2000,"elapsed_s":11,"total_steps":10}
)";

// The first run's part of kRecordedRuns, as the folder holds it while the job is requeued.
std::string first_run_of_recorded() {
  const std::string all = kRecordedRuns;
  return all.substr(0, all.find("{\"event\":\"run_start\",\"step\":5"));
}

// A project folder with metrics.jsonl and a committed checkpoint that `latest` names.
void write_project(const TempDir& dir, const std::string& metrics, int checkpoint_step) {
  write_file(dir / "metrics.jsonl", metrics);
  const std::string name = "checkpoint-" + std::to_string(checkpoint_step) + ".h5";
  std::filesystem::create_directories(dir / "checkpoints");
  write_file(dir / "checkpoints" / name, "h5");
  write_file(dir / "checkpoints" / "latest", name + "\n");
}

SlurmQuery slurm_says(std::string state) {
  return [state](const std::string& job_id) {
    SlurmJobState job;
    job.job_id = job_id;
    job.state = state;
    job.source = "squeue";
    return job;
  };
}

TEST(ReadMetrics, TellsTheRunsApartByTheirRecords) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kRecordedRuns);
  const MetricsHistory history = read_metrics(dir / "metrics.jsonl");
  ASSERT_EQ(history.points.size(), 5u);  // the records are not points
  ASSERT_EQ(history.runs.size(), 2u);
  const RunSegment& first = history.runs[0];
  EXPECT_EQ(first.start_step, 0);
  EXPECT_EQ(first.first_point, 0u);
  EXPECT_EQ(first.end_point, 3u);
  EXPECT_EQ(first.slurm_job_id, "123");
  EXPECT_EQ(first.stop_step, 5);
  EXPECT_EQ(first.stop_reason, "preempted");
  EXPECT_EQ(first.stop_signal, "SIGUSR1");
  const RunSegment& second = history.runs[1];
  EXPECT_TRUE(second.start_recorded);
  EXPECT_EQ(second.start_step, 5);
  EXPECT_EQ(second.first_point, 3u);
  EXPECT_EQ(second.end_point, 5u);
  EXPECT_FALSE(second.stop_step);
  EXPECT_DOUBLE_EQ(*history.points[2].lr, 8e-4);
  EXPECT_EQ(resume_steps(history), std::vector<long long>{5});
}

TEST(ReadMetrics, FindsTheResumesOfALogWithoutRunRecords) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const MetricsHistory history = read_metrics(dir / "metrics.jsonl");
  ASSERT_EQ(history.runs.size(), 2u);
  EXPECT_FALSE(history.runs[1].start_recorded);
  EXPECT_EQ(history.runs[1].start_step, 6);  // its first logged step
  EXPECT_EQ(history.runs[1].first_point, 4u);
  EXPECT_FALSE(history.runs[1].slurm_job_id);
  EXPECT_EQ(resume_steps(history), std::vector<long long>{6});
}

TEST(ProjectStatus, APendingJobShowsSlurmsStateTheStopAndTheCheckpointButNoEta) {
  TempDir dir;
  write_project(dir, first_run_of_recorded(), 5);
  std::vector<std::string> asked;
  const ProjectStatus status = read_project_status(dir.path(), [&](const std::string& job_id) {
    asked.push_back(job_id);
    return slurm_says("PENDING")(job_id);
  });
  EXPECT_EQ(asked, std::vector<std::string>{"123"});
  EXPECT_EQ(status.state, "waiting");
  EXPECT_EQ(status.step, 4);
  EXPECT_EQ(status.checkpoint_step, 5);
  EXPECT_FALSE(status.eta_s);
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "state       PENDING (Slurm job 123; metrics.jsonl updated"));
  EXPECT_TRUE(contains(text, "step        4/10 (40.0%) logged, 5 checkpointed; epoch 0.40"));
  EXPECT_TRUE(contains(text, "stopped     after step 5 by SIGUSR1 (checkpoint saved"));
  EXPECT_FALSE(contains(text, "ETA"));
  const std::string json = render_status_json(status);
  EXPECT_TRUE(contains(json, R"("state":"waiting","slurm_job_id":"123","slurm_state":"PENDING")"));
  EXPECT_TRUE(contains(json, R"("stop_step":5,"stop_reason":"preempted","stop_signal":"SIGUSR1")"));
}

TEST(ProjectStatus, ARunningJobsEtaUsesTheSpeedOfTheResumedRunOnly) {
  TempDir dir;
  write_project(dir, kRecordedRuns, 5);
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("RUNNING"));
  EXPECT_EQ(status.state, "running");
  EXPECT_EQ(status.restarts, 1);
  ASSERT_TRUE(status.steps_per_s);
  EXPECT_DOUBLE_EQ(*status.steps_per_s, 2.0);  // steps 6 -> 8 in 1 s of the resumed run
  ASSERT_TRUE(status.eta_s);
  EXPECT_DOUBLE_EQ(*status.eta_s, 1.0);
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "state       RUNNING (Slurm job 123;"));
  EXPECT_TRUE(contains(text, "step        8/10 (80.0%) logged, 5 checkpointed"));
  EXPECT_TRUE(contains(text, "resumed 1 time(s)"));
  EXPECT_TRUE(contains(text, "2.00 steps/s (latest run)"));
  EXPECT_TRUE(contains(text, "ETA         1s\n"));
  EXPECT_FALSE(contains(text, "stopped     "));  // the running run has not stopped
}

TEST(ProjectStatus, ARunWithOneLineSoFarTakesItsSpeedFromItsStart) {
  TempDir dir;
  std::string metrics = kRecordedRuns;
  metrics = metrics.substr(0, metrics.find("{\"step\":8"));  // the resumed run logged step 6
  write_project(dir, metrics, 5);
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("RUNNING"));
  ASSERT_TRUE(status.steps_per_s);
  EXPECT_DOUBLE_EQ(*status.steps_per_s, 0.1);  // 1 step (5 -> 6) in its first 10 s
}

TEST(ProjectStatus, AnEndedJobThatDidNotFinishIsStoppedWithoutEta) {
  TempDir dir;
  write_project(dir, kRecordedRuns, 5);
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("TIMEOUT"));
  EXPECT_EQ(status.state, "stopped");
  EXPECT_FALSE(status.eta_s);
  EXPECT_TRUE(contains(render_status(status), "state       TIMEOUT (Slurm job 123;"));
}

TEST(ProjectStatus, SaysWhyTheStateIsUnknownWhenSlurmDoesNotAnswer) {
  TempDir dir;
  write_project(dir, kRecordedRuns, 5);
  const ProjectStatus status = read_project_status(dir.path(), [](const std::string& job_id) {
    SlurmJobState job;
    job.job_id = job_id;
    job.unknown_reason = "squeue: not found in PATH";
    return job;
  });
  EXPECT_EQ(status.state, "unknown");
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "state       unknown (Slurm job 123: squeue: not found in PATH;"));
  EXPECT_TRUE(contains(text, "ETA         1s if it is still running"));
  EXPECT_TRUE(contains(render_status_json(status),
                       R"("slurm_state":null,"slurm_state_unknown":"squeue: not found in PATH")"));
}

// A run outside Slurm (mpirun on a workstation): the project lock says whether it runs.
TEST(ProjectStatus, ARunOutsideSlurmIsRunningWhileItHoldsTheProjectLock) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string holder = std::string("host ") + host + " pid 4242";
  write_file(dir / ".lock", holder + "\n");
  const int fd = ::open((dir.path() / ".lock").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);  // as the running trainer holds it
  ProjectStatus status = read_project_status(dir.path(), slurm_says("RUNNING"));
  EXPECT_EQ(status.state, "running");
  EXPECT_TRUE(contains(render_status(status),
                       "state       running (" + holder + " holds the project lock;"));
  ::close(fd);  // the run ended without its stop record (killed)
  status = read_project_status(dir.path(), slurm_says("RUNNING"));
  EXPECT_EQ(status.state, "stopped");
  EXPECT_TRUE(
      contains(render_status(status), "stopped (" + holder + " ended without recording its stop;"));
  write_file(dir / ".lock", "host elsewhere pid 7\n");  // another host's run: not visible here
  EXPECT_EQ(read_project_status(dir.path(), slurm_says("RUNNING")).state, "unknown");
}

TEST(ProjectStatus, ALogWithoutAJobIdAsksNoOneAndSaysSo) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  bool asked = false;
  const ProjectStatus status = read_project_status(dir.path(), [&](const std::string& job_id) {
    asked = true;
    return slurm_says("RUNNING")(job_id);
  });
  EXPECT_FALSE(asked);
  EXPECT_EQ(status.state, "unknown");
  EXPECT_EQ(status.step, 8);
  EXPECT_EQ(status.restarts, 1);
  ASSERT_TRUE(status.steps_per_s);
  EXPECT_DOUBLE_EQ(*status.steps_per_s, 2.0);  // steps 6 -> 8 in 1 s of the resumed run
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "state       unknown (no Slurm job recorded"));
  EXPECT_TRUE(contains(text, "step        8/10 (80.0%) logged, none checkpointed"));
  EXPECT_TRUE(contains(text, "checkpoint  none yet"));
}

TEST(ProjectStatus, ARunOutsideSlurmThatRecordedItsStopIsStopped) {
  TempDir dir;
  write_file(dir / "metrics.jsonl",
             R"({"event":"run_start","step":0,"total_steps":10}
{"step":2,"loss":5.0,"lr":1e-3,"elapsed_s":2,"total_steps":10}
{"event":"run_stop","step":3,"total_steps":10,"elapsed_s":3,"reason":"preempted","signal":"SIGTERM"}
)");
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("RUNNING"));
  EXPECT_EQ(status.state, "stopped");
  EXPECT_FALSE(status.eta_s);
  EXPECT_TRUE(contains(render_status(status), "stopped     after step 3 by SIGTERM"));
}

TEST(ProjectStatus, FinishedWhenTheLastStepIsLoggedAndTheModelExported) {
  TempDir dir;
  write_project(
      dir,
      std::string(kRecordedRuns) +
          R"({"step":10,"epoch":1,"loss":2.9,"lr":0,"tokens_per_s":2000,"elapsed_s":12,"total_steps":10})"
          "\n"
          R"({"event":"run_stop","step":10,"total_steps":10,"elapsed_s":12.5,"reason":"completed"})"
          "\n",
      10);
  write_file(dir / "model.safetensors", "x");
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("COMPLETED"));
  EXPECT_EQ(status.state, "finished");
  EXPECT_EQ(status.latest_run->stop_reason, "completed");
  EXPECT_FALSE(status.eta_s);
  const std::string text = render_status(status);
  EXPECT_TRUE(contains(text, "state       finished (Slurm job 123 COMPLETED)\n"));
  EXPECT_FALSE(contains(text, "stopped     "));
  EXPECT_TRUE(contains(render_status_json(status), R"("state":"finished")"));
}

TEST(ProjectStatus, FallsBackToTheNewestCommittedCheckpointWithoutLatest) {
  TempDir dir;
  write_project(dir, kRecordedRuns, 5);
  std::filesystem::remove(dir / "checkpoints" / "latest");
  write_file(dir / "checkpoints" / "checkpoint-3.h5", "h5");
  write_file(dir / "checkpoints" / "commits", "checkpoint-5.h5\ncheckpoint-3.h5\n");
  const ProjectStatus status = read_project_status(dir.path(), slurm_says("RUNNING"));
  EXPECT_EQ(status.checkpoint_step, 3);  // the newest commit, not the highest step
}

TEST(ProjectStatus, RejectsAFolderThatIsNotAProject) {
  TempDir dir;
  EXPECT_TRUE(contains(error_message([&] { read_project_status(dir.path()); }),
                       "not an autotrain project folder"));
  EXPECT_TRUE(
      contains(error_message([&] { read_project_status(dir / "missing"); }), "is not a folder"));
}

// PATH for the life of the object: the fake Slurm commands of a test, and nothing else.
class ScopedPath {
 public:
  explicit ScopedPath(const std::filesystem::path& folder) {
    if (const char* path = std::getenv("PATH")) saved_ = path;
    ::setenv("PATH", folder.c_str(), 1);
  }
  ~ScopedPath() { ::setenv("PATH", saved_.c_str(), 1); }
  ScopedPath(const ScopedPath&) = delete;
  ScopedPath& operator=(const ScopedPath&) = delete;

 private:
  std::string saved_;
};

// An executable shell script `name` in `folder`.
void write_script(const TempDir& folder, const std::string& name, const std::string& body) {
  write_file(folder / name, "#!/bin/sh\n" + body);
  ::chmod((folder / name).c_str(), 0755);
}

TEST(SlurmJobState, ParsesTheFirstWordOfTheFirstLine) {
  EXPECT_EQ(parse_job_state("PENDING\n"), "PENDING");
  EXPECT_EQ(parse_job_state("\nCANCELLED by 1000\n"), "CANCELLED");
  EXPECT_EQ(parse_job_state("REQUEUE_HOLD"), "REQUEUE_HOLD");
  EXPECT_FALSE(parse_job_state(""));
  EXPECT_FALSE(parse_job_state("slurm_load_jobs error: Invalid job id specified\n"));
}

TEST(SlurmJobState, AsksSqueueForTheJob) {
  TempDir bin;
  // Answers only the exact question status asks.
  write_script(bin, "squeue",
               "[ \"$*\" = \"-h -j 123 -o %T\" ] || { echo \"unexpected: $*\" >&2; exit 2; }\n"
               "echo PENDING\n");
  const ScopedPath path(bin.path());
  const SlurmJobState job = query_slurm_job("123");
  EXPECT_EQ(job.state, "PENDING");
  EXPECT_EQ(job.source, "squeue");
}

TEST(SlurmJobState, AsksSacctAboutAJobThatSqueueForgot) {
  TempDir bin;
  write_script(bin, "squeue",
               "echo 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n");
  write_script(bin, "sacct", "echo 'COMPLETED'\n");
  const ScopedPath path(bin.path());
  const SlurmJobState job = query_slurm_job("123");
  EXPECT_EQ(job.state, "COMPLETED");
  EXPECT_EQ(job.source, "sacct");
}

TEST(SlurmJobState, UnknownWithTheReasonWhenNeitherKnowsTheJob) {
  TempDir bin;
  write_script(bin, "squeue", "exit 0\n");
  write_script(bin, "sacct", "echo 'Slurm accounting storage is disabled' >&2\nexit 1\n");
  const ScopedPath path(bin.path());
  const SlurmJobState job = query_slurm_job("123");
  EXPECT_FALSE(job.state);
  EXPECT_TRUE(contains(job.unknown_reason, "squeue does not list the job"));
  EXPECT_TRUE(contains(job.unknown_reason,
                       "sacct exited with status 1: Slurm accounting storage is disabled"));
}

TEST(SlurmJobState, UnknownWhenSqueueIsMissing) {
  TempDir empty;
  const ScopedPath path(empty.path());
  const SlurmJobState job = query_slurm_job("123");
  EXPECT_FALSE(job.state);
  EXPECT_EQ(job.unknown_reason, "squeue: not found in PATH");
}

TEST(SlurmJobState, GivesUpOnASqueueThatHangs) {
  TempDir bin;
  write_script(bin, "squeue", "exec /bin/sleep 30\n");
  const ScopedPath path(bin.path());
  const auto start = std::chrono::steady_clock::now();
  const SlurmJobState job = query_slurm_job("123", 0.3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(job.state);
  EXPECT_TRUE(contains(job.unknown_reason, "squeue did not answer within 0.3 s"));
}

TEST(SlurmJobState, StatusAsksTheFakeSqueueInPath) {
  TempDir dir;
  write_project(dir, first_run_of_recorded(), 5);
  TempDir bin;
  write_script(bin, "squeue", "echo REQUEUED\n");
  const ScopedPath path(bin.path());
  const ProjectStatus status = read_project_status(dir.path());
  EXPECT_EQ(status.state, "waiting");
  EXPECT_TRUE(contains(render_status(status), "state       REQUEUED (Slurm job 123;"));
}

TEST(RunCommand, CapturesOutputAndExitStatusAndKillsAtTheTimeout) {
  TempDir bin;
  write_script(bin, "talk", "echo out; echo err >&2; exit 4\n");
  const CommandResult talk = run_command({(bin / "talk").string()}, 5);
  EXPECT_TRUE(talk.started);
  EXPECT_EQ(talk.exit_status, 4);
  EXPECT_EQ(talk.output, "out\n");
  EXPECT_EQ(talk.errors, "err\n");
  // A child that keeps the pipe open after its parent is killed must not hold us up.
  write_script(bin, "stall", "/bin/sleep 30 &\n/bin/sleep 30\n");
  const auto start = std::chrono::steady_clock::now();
  const CommandResult stall = run_command({(bin / "stall").string()}, 0.3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(stall.timed_out);
  EXPECT_FALSE(run_command({(bin / "missing").string()}, 1).started);
}

// The text of the first element with `css_class`, or "" when there is none.
std::string element_text(const std::string& svg, const std::string& css_class) {
  const auto at = svg.find("class=\"" + css_class + "\"");
  if (at == std::string::npos) return "";
  const auto begin = svg.find('>', at) + 1;
  return svg.substr(begin, svg.find('<', begin) - begin);
}

// The attribute `name` of the first element with `css_class`.
std::string attribute(const std::string& svg, const std::string& css_class,
                      const std::string& name) {
  const auto at = svg.find("class=\"" + css_class + "\"");
  if (at == std::string::npos) return "";
  const auto begin = svg.find(name + "=\"", at) + name.size() + 2;
  return svg.substr(begin, svg.find('"', begin) - begin);
}

TEST(LossSvg, DrawsBothCurvesWithAPointPerStep) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kResumedRun);
  const MetricsHistory history = read_metrics(dir / "metrics.jsonl");
  const std::string svg = render_loss_svg(latest_per_step(history.points), {}, "run");
  EXPECT_TRUE(svg.starts_with("<?xml"));
  EXPECT_TRUE(contains(svg, "</svg>\n"));
  const std::string points = attribute(svg, "train", "points");
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 4);  // steps 2, 4, 6, 8
  EXPECT_TRUE(contains(svg, "<polyline class=\"validation\""));
  EXPECT_TRUE(contains(svg, "validation loss"));
  EXPECT_FALSE(contains(svg, "class=\"resume\""));
}

TEST(LossSvg, LabelsBothAxesAndDrawsTheLearningRateOnTheRight) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kRecordedRuns);
  const MetricsHistory history = read_metrics(dir / "metrics.jsonl");
  const std::string svg = render_loss_svg(latest_per_step(history.points), {}, "run");
  EXPECT_EQ(element_text(svg, "x-axis-label"), "optimizer step");
  EXPECT_EQ(element_text(svg, "y-axis-label"), "loss");
  EXPECT_EQ(element_text(svg, "y2-axis-label"), "learning rate");
  EXPECT_TRUE(contains(attribute(svg, "y2-axis-label", "transform"), "rotate(90 "));
  // One lr point per logged step (0, 2, 4, 6, 8) against the right axis, 0 to 0.0015 in steps
  // of 0.0005 (room above the peak of 1e-3) over the plot's 390 px from y 40 down.
  const std::string lr = attribute(svg, "lr", "points");
  EXPECT_EQ(std::count(lr.begin(), lr.end(), ','), 5);
  EXPECT_TRUE(lr.starts_with("70.0,430.0 "));  // step 0: lr 0 at the bottom left
  char peak[32];
  std::snprintf(peak, sizeof peak, ",%.1f ", 40 + (1.5e-3 - 1e-3) / 1.5e-3 * 390);
  EXPECT_TRUE(contains(lr, peak));  // step 2: lr 1e-3
  for (const char* tick : {">0</text>", ">0.0005</text>", ">0.001</text>", ">0.0015</text>"})
    EXPECT_TRUE(contains(svg, tick)) << tick;
  EXPECT_TRUE(contains(svg, ">learning rate</text>"));  // the legend entry
}

TEST(LossSvg, LeavesOutTheLearningRateAxisWhenTheLogHasNoLr) {
  std::vector<MetricsPoint> curve(2);
  curve[0].step = 1;
  curve[0].loss = 5.0;
  curve[1].step = 2;
  curve[1].loss = 4.0;
  const std::string svg = render_loss_svg(curve, {}, "run");
  EXPECT_FALSE(contains(svg, "learning rate"));
  EXPECT_FALSE(contains(svg, "class=\"lr\""));
}

TEST(LossSvg, MarksEachResumeWithADashedLine) {
  TempDir dir;
  write_file(dir / "metrics.jsonl", kRecordedRuns);
  const MetricsHistory history = read_metrics(dir / "metrics.jsonl");
  const std::string svg =
      render_loss_svg(latest_per_step(history.points), resume_steps(history), "run");
  // Steps 0..8 over the 650 px from x 70: step 5 at 70 + 5/8 * 650.
  char x[16];
  std::snprintf(x, sizeof x, "%.1f", 70 + 5.0 / 8 * 650);
  EXPECT_EQ(attribute(svg, "resume", "x1"), x);
  EXPECT_EQ(attribute(svg, "resume", "x2"), x);
  EXPECT_FALSE(attribute(svg, "resume", "stroke-dasharray").empty());
  EXPECT_TRUE(contains(svg, "<title>resumed at step 5</title>"));
  const std::string marker = "class=\"resume\"";
  size_t markers = 0;
  for (auto at = svg.find(marker); at != std::string::npos; at = svg.find(marker, at + 1))
    ++markers;
  EXPECT_EQ(markers, 1u);
  EXPECT_TRUE(contains(svg, ">resumed</text>"));  // the legend entry
}

TEST(LossSvg, RejectsMetricsWithoutAnyLoss) {
  EXPECT_TRUE(contains(error_message([] { render_loss_svg({MetricsPoint{}}, {}, "run"); }),
                       "no loss values yet"));
}

}  // namespace
}  // namespace autotrain::cli::project_report_test
