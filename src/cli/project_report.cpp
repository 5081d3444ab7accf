#include "autotrain/cli/project_report.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/train/metrics.hpp"

namespace autotrain::cli {
namespace {

namespace fs = std::filesystem;

std::optional<double> optional_number(const nlohmann::json& line, const char* key) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string optional_text(const nlohmann::json& line, const char* key) {
  const auto it = line.find(key);
  return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// In a log written before the run records, a run restarts (a resume appends) where the step or
// the elapsed time goes backwards.
bool starts_new_run(const MetricsPoint& previous, const MetricsPoint& point) {
  return point.elapsed_s < previous.elapsed_s || point.step < previous.step;
}

MetricsPoint point_of(const nlohmann::json& line) {
  MetricsPoint point;
  point.step = line["step"].get<long long>();
  point.total_steps = static_cast<long long>(optional_number(line, "total_steps").value_or(0));
  point.epoch = optional_number(line, "epoch").value_or(0);
  point.loss = optional_number(line, "loss");
  point.val_loss = optional_number(line, "val_loss");
  point.lr = optional_number(line, "lr");
  point.tokens_per_s = optional_number(line, "tokens_per_s").value_or(0);
  point.elapsed_s = optional_number(line, "elapsed_s").value_or(0);
  return point;
}

}  // namespace

MetricsHistory read_metrics(const fs::path& file) {
  std::ifstream in(file);
  AT_CHECK(in, "cannot read ", file.string());
  MetricsHistory history;
  auto& runs = history.runs;
  const auto begin_run = [&](long long start_step, bool recorded) {
    RunSegment run;
    run.start_step = start_step;
    run.start_recorded = recorded;
    run.first_point = run.end_point = history.points.size();
    runs.push_back(run);
  };
  std::string text;
  for (int line_number = 1; std::getline(in, text); ++line_number) {
    if (text.empty()) continue;
    nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    // The job may be writing the last line right now: a torn final line is not an error.
    if (line.is_discarded() && in.peek() == std::char_traits<char>::eof()) break;
    if (!line.is_object() || !line.contains("step") || !line["step"].is_number_integer()) {
      // A line torn by a kill mid-write, that a resumed run's first line was then appended
      // to (runs since then repair the tail before appending): skipped, not fatal.
      log::warn(file.string(), ":", line_number,
                ": skipped a line that is not a metrics line (a JSON object with an integer "
                "\"step\"), probably torn by a killed run: '",
                text.substr(0, 80), "'");
      continue;
    }
    const long long step = line["step"].get<long long>();
    const long long total_steps =
        static_cast<long long>(optional_number(line, "total_steps").value_or(0));
    if (line.contains("event")) {
      const std::string event = optional_text(line, "event");
      if (event == "run_start") {
        begin_run(step, true);
        if (const std::string job = optional_text(line, "slurm_job_id"); !job.empty())
          runs.back().slurm_job_id = job;
      } else if (event == "run_stop") {
        if (runs.empty() || runs.back().stop_step) begin_run(step, false);
        runs.back().stop_step = step;
        runs.back().stop_reason = optional_text(line, "reason");
        runs.back().stop_signal = optional_text(line, "signal");
      }
      // Other events (from a newer autotrain) carry no metrics: passed over.
      if (!runs.empty() && total_steps > 0) runs.back().total_steps = total_steps;
      continue;
    }
    const MetricsPoint point = point_of(line);
    const bool new_run = runs.empty() || runs.back().stop_step ||
                         (runs.back().end_point > runs.back().first_point &&
                          starts_new_run(history.points.back(), point));
    if (new_run) begin_run(point.step, false);
    history.points.push_back(point);
    runs.back().end_point = history.points.size();
    if (point.total_steps > 0) runs.back().total_steps = point.total_steps;
  }
  return history;
}

std::vector<MetricsPoint> latest_per_step(const std::vector<MetricsPoint>& points) {
  std::map<long long, MetricsPoint> by_step;
  for (const auto& point : points) {
    auto [it, inserted] = by_step.try_emplace(point.step, point);
    if (inserted) continue;
    // Keep a value the newer line lacks (an evaluation logged on its own line).
    MetricsPoint merged = point;
    if (!merged.loss) merged.loss = it->second.loss;
    if (!merged.val_loss) merged.val_loss = it->second.val_loss;
    if (!merged.lr) merged.lr = it->second.lr;
    it->second = merged;
  }
  std::vector<MetricsPoint> curve;
  for (const auto& [step, point] : by_step) curve.push_back(point);
  return curve;
}

std::vector<long long> resume_steps(const MetricsHistory& history) {
  std::vector<long long> steps;
  for (size_t i = 1; i < history.runs.size(); ++i) steps.push_back(history.runs[i].start_step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

namespace {

// What a Slurm job state means for the training: "running", "waiting" (it will or may run
// again) or "stopped".
std::string phase_of(const std::string& slurm_state) {
  if (slurm_state == "RUNNING" || slurm_state == "RESIZING") return "running";
  for (const char* waiting : {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING",
                              "SUSPENDED", "STOPPED", "RESV_DEL_HOLD"}) {
    if (slurm_state == waiting) return "waiting";
  }
  return "stopped";  // COMPLETED, COMPLETING, CANCELLED, FAILED, TIMEOUT, PREEMPTED, ...
}

// The checkpoint a resume would take first (latest, else the newest commit) and its step.
void find_checkpoint(const fs::path& folder, ProjectStatus& status) {
  const ckpt::CheckpointDir checkpoints(folder);
  const std::vector<fs::path> newest = checkpoints.newest_first();
  if (newest.empty()) return;
  status.checkpoint = newest.front();
  for (const auto& entry : checkpoints.list()) {
    if (entry.path.filename() == newest.front().filename()) status.checkpoint_step = entry.step;
  }
}

}  // namespace

ProjectStatus read_project_status(const fs::path& project) {
  return read_project_status(project,
                             [](const std::string& job_id) { return query_slurm_job(job_id); });
}

namespace {

// The project lock (train/project_lock.cpp): its text, and whether a run holds it (a shared lock
// taken and dropped at once: it fails while a run holds the exclusive one).
void probe_project_lock(const fs::path& project, ProjectStatus& status) {
  const int fd = ::open((project / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char text[256] = {};
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  status.lock_holder = trim(std::string(text, got > 0 ? static_cast<std::size_t>(got) : 0));
  status.lock_held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock, if it was taken
}

// Whether the lock's text names this host ("host NAME pid N").
bool locked_on_this_host(const std::string& holder) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return holder.starts_with(cat("host ", host, " "));
}

}  // namespace

ProjectStatus read_project_status(const fs::path& project, const SlurmQuery& ask_slurm) {
  AT_CHECK(fs::is_directory(project), "status: '", project.string(),
           "' is not a folder; give the project folder (the run's project_name)");
  ProjectStatus status;
  status.project = project;
  const fs::path metrics_file = project / "metrics.jsonl";
  AT_CHECK(
      fs::exists(metrics_file) || fs::exists(project / "training_params.json"), "status: '",
      project.string(),
      "' holds neither metrics.jsonl nor training_params.json: not an autotrain project folder");
  status.exported = fs::exists(project / "model.safetensors");
  find_checkpoint(project / "checkpoints", status);

  status.state = "not started";
  if (!fs::exists(metrics_file)) return status;
  const MetricsHistory history = read_metrics(metrics_file);
  const auto age = fs::file_time_type::clock::now() - fs::last_write_time(metrics_file);
  status.seconds_since_update = std::chrono::duration<double>(age).count();
  if (history.runs.empty()) return status;
  status.restarts = static_cast<int>(history.runs.size()) - 1;
  const RunSegment& run = history.runs.back();
  status.latest_run = run;
  status.total_steps = run.total_steps;
  const auto& points = history.points;
  if (!points.empty()) {
    const MetricsPoint& last = points.back();
    status.step = last.step;
    if (last.total_steps > 0) status.total_steps = last.total_steps;
    status.epoch = last.epoch;
  }
  for (const auto& point : points) {
    if (point.loss) status.last_loss = point;
    if (point.val_loss) status.last_val = point;
    if (point.tokens_per_s > 0) status.tokens_per_s = point.tokens_per_s;
  }
  // The speed of the latest run alone: an earlier run's clock started at another time.
  if (run.end_point > run.first_point) {
    const MetricsPoint& first = points[run.first_point];
    const MetricsPoint& last = points[run.end_point - 1];
    if (last.step > first.step && last.elapsed_s > first.elapsed_s) {
      status.steps_per_s =
          static_cast<double>(last.step - first.step) / (last.elapsed_s - first.elapsed_s);
    } else if (run.start_recorded && last.step > run.start_step && last.elapsed_s > 0) {
      // One line so far: its clock started at the run's first step.
      status.steps_per_s = static_cast<double>(last.step - run.start_step) / last.elapsed_s;
    }
  }

  if (run.slurm_job_id) status.slurm = ask_slurm(*run.slurm_job_id);
  const bool finished =
      status.total_steps > 0 && status.step >= status.total_steps && status.exported;
  if (finished) {
    status.state = "finished";
  } else if (status.slurm && status.slurm->state) {
    status.state = phase_of(*status.slurm->state);
  } else if (!status.slurm && run.stop_step) {
    status.state = "stopped";  // a run outside Slurm that recorded its stop
  } else if (!status.slurm) {
    // Outside Slurm the project lock tells: held by a run, or left by one that ended (killed,
    // without its stop record) on this host. A lock from another host may not be visible here.
    probe_project_lock(project, status);
    if (status.lock_held) {
      status.state = "running";
    } else if (!status.lock_holder.empty() && locked_on_this_host(status.lock_holder)) {
      status.state = "stopped";
    } else {
      status.state = "unknown";
    }
  } else {
    status.state = "unknown";
  }
  // A RUNNING job whose latest run recorded its stop is between runs (exporting, or a requeued
  // run not yet started): no ETA from the stopped run.
  const bool may_run = status.state == "running" || status.state == "unknown";
  if (may_run && !run.stop_step && status.steps_per_s && status.total_steps > status.step) {
    status.eta_s = static_cast<double>(status.total_steps - status.step) / *status.steps_per_s;
  }
  return status;
}

namespace {

// The state line: Slurm's word for the job when it answered, else why the state is unknown.
std::string describe_state(const ProjectStatus& s) {
  if (s.state == "not started" || !s.seconds_since_update) return s.state;
  const std::string updated =
      cat("metrics.jsonl updated ", train::format_duration(*s.seconds_since_update), " ago");
  if (s.slurm) {
    const SlurmJobState& job = *s.slurm;
    if (s.state == "finished")
      return cat("finished (Slurm job ", job.job_id, job.state ? " " + *job.state : "", ")");
    if (job.state) return cat(*job.state, " (Slurm job ", job.job_id, "; ", updated, ")");
    return cat("unknown (Slurm job ", job.job_id, ": ", job.unknown_reason, "; ", updated, ")");
  }
  if (s.state == "finished") return s.state;
  if (s.state == "running")
    return cat("running (", s.lock_holder, " holds the project lock; ", updated, ")");
  if (s.state == "stopped" && !s.lock_holder.empty() &&
      !(s.latest_run && s.latest_run->stop_step)) {
    return cat("stopped (", s.lock_holder, " ended without recording its stop; ", updated, ")");
  }
  if (s.state == "stopped") return cat("stopped (", updated, ")");
  return cat(
      "unknown (no Slurm job recorded: a run outside Slurm, or by an autotrain that did "
      "not record it; ",
      updated, ")");
}

std::string describe_stop(const RunSegment& run) {
  if (run.stop_reason == "completed") return cat("after step ", *run.stop_step, ": all steps done");
  if (run.stop_reason == "preempted") {
    return cat("after step ", *run.stop_step, " by ",
               run.stop_signal.empty() ? std::string("a stop signal") : run.stop_signal,
               " (checkpoint saved; a resume continues from it)");
  }
  return cat("after step ", *run.stop_step,
             run.stop_reason.empty() ? std::string() : cat(" (", run.stop_reason, ")"));
}

}  // namespace

std::string render_status(const ProjectStatus& s) {
  std::string out = cat("project     ", s.project.string(), "\n");
  out += cat("state       ", describe_state(s), "\n");
  if (s.total_steps > 0) {
    out += cat(
        "step        ", s.step, "/", s.total_steps, " (",
        fixed_point(100.0 * static_cast<double>(s.step) / static_cast<double>(s.total_steps), 1),
        "%) logged, ",
        s.checkpoint_step ? cat(*s.checkpoint_step, " checkpointed")
                          : std::string("none checkpointed"),
        "; epoch ", fixed_point(s.epoch, 2),
        s.restarts > 0 ? cat(", resumed ", s.restarts, " time(s)") : std::string(), "\n");
  }
  if (s.latest_run && s.latest_run->stop_step && s.state != "finished")
    out += cat("stopped     ", describe_stop(*s.latest_run), "\n");
  if (s.last_loss)
    out += cat("loss        ", fixed_point(*s.last_loss->loss, 4), " (step ", s.last_loss->step,
               ")\n");
  if (s.last_val) {
    out += cat("val loss    ", fixed_point(*s.last_val->val_loss, 4), " (step ", s.last_val->step,
               ")\n");
  }
  if (s.tokens_per_s > 0) {
    out += cat("speed       ", fixed_point(s.tokens_per_s, 0), " tokens/s",
               s.steps_per_s ? cat(", ", fixed_point(*s.steps_per_s, 2), " steps/s (latest run)")
                             : std::string(),
               "\n");
  }
  if (s.eta_s) {
    out += cat("ETA         ", train::format_duration(*s.eta_s),
               s.state == "unknown" ? " if it is still running" : "", "\n");
  }
  out += cat("checkpoint  ",
             s.checkpoint ? cat(s.checkpoint->string(), " (step ",
                                s.checkpoint_step ? std::to_string(*s.checkpoint_step) : "?", ")")
                          : std::string("none yet"),
             "\n");
  out +=
      cat("model       ",
          s.exported ? (s.project / "model.safetensors").string() : std::string("not exported yet"),
          "\n");
  return out;
}

std::string render_status_json(const ProjectStatus& s) {
  const auto or_null = [](const auto& value) {
    return value ? nlohmann::json(*value) : nlohmann::json();
  };
  nlohmann::ordered_json json;
  json["project"] = s.project.string();
  json["state"] = s.state;
  json["slurm_job_id"] = s.slurm ? nlohmann::json(s.slurm->job_id) : nlohmann::json();
  json["slurm_state"] = s.slurm ? or_null(s.slurm->state) : nlohmann::json();
  json["slurm_state_unknown"] =
      s.slurm && !s.slurm->state ? nlohmann::json(s.slurm->unknown_reason) : nlohmann::json();
  json["step"] = s.step;
  json["total_steps"] = s.total_steps;
  json["epoch"] = s.epoch;
  json["loss"] = s.last_loss ? nlohmann::json(*s.last_loss->loss) : nlohmann::json();
  json["val_loss"] = s.last_val ? nlohmann::json(*s.last_val->val_loss) : nlohmann::json();
  json["tokens_per_s"] = s.tokens_per_s;
  json["steps_per_s"] = or_null(s.steps_per_s);
  json["eta_s"] = or_null(s.eta_s);
  json["restarts"] = s.restarts;
  json["checkpoint"] = s.checkpoint ? nlohmann::json(s.checkpoint->string()) : nlohmann::json();
  json["checkpoint_step"] = or_null(s.checkpoint_step);
  const bool stopped = s.latest_run && s.latest_run->stop_step;
  json["stop_step"] = stopped ? nlohmann::json(*s.latest_run->stop_step) : nlohmann::json();
  json["stop_reason"] = stopped ? nlohmann::json(s.latest_run->stop_reason) : nlohmann::json();
  json["stop_signal"] = stopped && !s.latest_run->stop_signal.empty()
                            ? nlohmann::json(s.latest_run->stop_signal)
                            : nlohmann::json();
  json["exported"] = s.exported;
  return json.dump() + "\n";
}

std::optional<std::vector<SweepEntry>> read_sweep(const fs::path& project) {
  const fs::path file = project / "sweep.json";
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return std::nullopt;
  std::ifstream in(file);
  AT_CHECK(in, "cannot read ", file.string());
  std::vector<SweepEntry> entries;
  try {
    const auto sweep = nlohmann::json::parse(in);
    for (const auto& model : sweep.at("models")) {
      const int k = model.at("model").get<int>();
      std::vector<std::string> changes;
      for (const auto& [name, value] : model.at("changes").items()) {
        changes.push_back(cat(name, " ", value.get<std::string>()));
      }
      entries.push_back({project / cat("model-", k),
                         cat("model ", k, changes.empty() ? "" : ": ", join(changes, ", ")),
                         model.at("status").get<std::string>()});
    }
  } catch (const nlohmann::json::exception& json_error) {
    throw Error(cat(file.string(), ": not a sweep.json that autotrain train wrote (",
                    json_error.what(), ")"));
  }
  return entries;
}

}  // namespace autotrain::cli
