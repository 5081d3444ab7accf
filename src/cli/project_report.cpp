#include "autotrain/cli/project_report.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/train/metrics.hpp"

namespace autotrain::cli {
namespace {

namespace fs = std::filesystem;

std::optional<double> optional_number(const nlohmann::json& line, const char* key) {
  const auto it = line.find(key);
  if (it == line.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// A run restarts (a resume appends) when the step or the elapsed time goes backwards.
bool starts_new_run(const MetricsPoint& previous, const MetricsPoint& point) {
  return point.elapsed_s < previous.elapsed_s || point.step < previous.step;
}

}  // namespace

std::vector<MetricsPoint> read_metrics(const fs::path& file) {
  std::ifstream in(file);
  AT_CHECK(in, "cannot read ", file.string());
  std::vector<MetricsPoint> points;
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
    MetricsPoint point;
    point.step = line["step"].get<long long>();
    point.total_steps = static_cast<long long>(optional_number(line, "total_steps").value_or(0));
    point.epoch = optional_number(line, "epoch").value_or(0);
    point.loss = optional_number(line, "loss");
    point.val_loss = optional_number(line, "val_loss");
    point.lr = optional_number(line, "lr").value_or(0);
    point.tokens_per_s = optional_number(line, "tokens_per_s").value_or(0);
    point.elapsed_s = optional_number(line, "elapsed_s").value_or(0);
    points.push_back(point);
  }
  return points;
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
    it->second = merged;
  }
  std::vector<MetricsPoint> curve;
  for (const auto& [step, point] : by_step) curve.push_back(point);
  return curve;
}

ProjectStatus read_project_status(const fs::path& project) {
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

  ckpt::CheckpointDir checkpoints(project / "checkpoints");
  if (auto latest = checkpoints.latest()) {
    status.checkpoint = *latest;
    for (const auto& entry : checkpoints.list()) {
      if (fs::equivalent(entry.path, *latest)) status.checkpoint_step = entry.step;
    }
  }

  if (!fs::exists(metrics_file)) {
    status.state = "not started";
    return status;
  }
  const std::vector<MetricsPoint> points = read_metrics(metrics_file);
  const auto age = fs::file_time_type::clock::now() - fs::last_write_time(metrics_file);
  status.seconds_since_update = std::chrono::duration<double>(age).count();
  if (points.empty()) {
    status.state = "not started";
    return status;
  }
  size_t run_start = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    if (starts_new_run(points[i - 1], points[i])) {
      run_start = i;
      ++status.restarts;
    }
  }
  const MetricsPoint& last = points.back();
  status.step = last.step;
  status.total_steps = last.total_steps;
  status.epoch = last.epoch;
  for (const auto& point : points) {
    if (point.loss) status.last_loss = point;
    if (point.val_loss) status.last_val = point;
    if (point.tokens_per_s > 0) status.tokens_per_s = point.tokens_per_s;
  }
  const MetricsPoint& first = points[run_start];
  if (last.step > first.step && last.elapsed_s > first.elapsed_s) {
    status.steps_per_s =
        static_cast<double>(last.step - first.step) / (last.elapsed_s - first.elapsed_s);
  }
  const bool finished =
      status.total_steps > 0 && status.step >= status.total_steps && status.exported;
  status.state = finished ? "finished" : "running or stopped";
  if (!finished && status.steps_per_s && status.total_steps > status.step) {
    status.eta_s = static_cast<double>(status.total_steps - status.step) / *status.steps_per_s;
  }
  return status;
}

std::string render_status(const ProjectStatus& s) {
  std::string out = cat("project     ", s.project.string(), "\n");
  out += cat("state       ", s.state);
  if (s.seconds_since_update && s.state != "finished") {
    out +=
        cat(" (metrics.jsonl updated ", train::format_duration(*s.seconds_since_update), " ago)");
  }
  out += "\n";
  if (s.total_steps > 0) {
    out += cat("step        ", s.step, "/", s.total_steps, " (",
               fixed(100.0 * static_cast<double>(s.step) / static_cast<double>(s.total_steps), 1),
               "%), epoch ", fixed(s.epoch, 2),
               s.restarts > 0 ? cat(", resumed ", s.restarts, " time(s)") : std::string(), "\n");
  }
  if (s.last_loss)
    out += cat("loss        ", fixed(*s.last_loss->loss, 4), " (step ", s.last_loss->step, ")\n");
  if (s.last_val) {
    out += cat("val loss    ", fixed(*s.last_val->val_loss, 4), " (step ", s.last_val->step, ")\n");
  }
  if (s.tokens_per_s > 0) {
    out +=
        cat("speed       ", fixed(s.tokens_per_s, 0), " tokens/s",
            s.steps_per_s ? cat(", ", fixed(*s.steps_per_s, 2), " steps/s") : std::string(), "\n");
  }
  if (s.eta_s) out += cat("ETA         ", train::format_duration(*s.eta_s), "\n");
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
  nlohmann::ordered_json json;
  json["project"] = s.project.string();
  json["state"] = s.state;
  json["step"] = s.step;
  json["total_steps"] = s.total_steps;
  json["epoch"] = s.epoch;
  json["loss"] = s.last_loss ? nlohmann::json(*s.last_loss->loss) : nlohmann::json();
  json["val_loss"] = s.last_val ? nlohmann::json(*s.last_val->val_loss) : nlohmann::json();
  json["tokens_per_s"] = s.tokens_per_s;
  json["eta_s"] = s.eta_s ? nlohmann::json(*s.eta_s) : nlohmann::json();
  json["restarts"] = s.restarts;
  json["checkpoint"] = s.checkpoint ? nlohmann::json(s.checkpoint->string()) : nlohmann::json();
  json["checkpoint_step"] =
      s.checkpoint_step ? nlohmann::json(*s.checkpoint_step) : nlohmann::json();
  json["exported"] = s.exported;
  return json.dump() + "\n";
}

namespace {

// 1, 2 or 5 times a power of ten, so that about `count` ticks span [low, high].
double nice_step(double low, double high, int count) {
  const double raw = (high - low) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return factor * power;
  }
  return 10 * power;
}

std::string tick_label(double value, double step) {
  const int digits = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  return fixed(value, digits);
}

std::string escape_xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_loss_svg(const std::vector<MetricsPoint>& curve, std::string_view title) {
  // Canvas 800 x 480; plot area inside the margins.
  constexpr double width = 800, height = 480, left = 70, right = 20, top = 40, bottom = 50;
  constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  double step_min = 0, step_max = 0, loss_min = INFINITY, loss_max = -INFINITY;
  bool any = false;
  for (const auto& point : curve) {
    for (const auto& value : {point.loss, point.val_loss}) {
      if (!value || !std::isfinite(*value)) continue;
      if (!any) step_min = step_max = static_cast<double>(point.step);
      any = true;
      step_min = std::min(step_min, static_cast<double>(point.step));
      step_max = std::max(step_max, static_cast<double>(point.step));
      loss_min = std::min(loss_min, *value);
      loss_max = std::max(loss_max, *value);
    }
  }
  AT_CHECK(any, "plot: metrics.jsonl has no loss values yet; nothing to draw");
  if (step_max == step_min) step_max = step_min + 1;
  if (loss_max - loss_min < 1e-9) {
    loss_min -= 0.5;
    loss_max += 0.5;
  }
  const double y_step = nice_step(loss_min, loss_max, 6);
  const double y_low = std::floor(loss_min / y_step) * y_step;
  const double y_high = std::ceil(loss_max / y_step) * y_step;
  const double x_step = nice_step(step_min, step_max, 8);
  auto x_of = [&](double step) {
    return left + (step - step_min) / (step_max - step_min) * plot_w;
  };
  auto y_of = [&](double loss) { return top + (y_high - loss) / (y_high - y_low) * plot_h; };

  std::string svg =
      cat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
          "width=\"",
          width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
          "\" font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"",
          width / 2, "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", escape_xml(title),
          "</text>\n");
  // Grid and tick labels.
  for (double y = y_low; y <= y_high + y_step / 2; y += y_step) {
    svg +=
        cat("<line x1=\"", left, "\" x2=\"", left + plot_w, "\" y1=\"", fixed(y_of(y), 1),
            "\" y2=\"", fixed(y_of(y), 1), "\" stroke=\"#ddd\"/>\n<text x=\"", left - 6, "\" y=\"",
            fixed(y_of(y) + 4, 1), "\" text-anchor=\"end\">", tick_label(y, y_step), "</text>\n");
  }
  for (double x = std::ceil(step_min / x_step) * x_step; x <= step_max + x_step / 100;
       x += x_step) {
    svg += cat("<line x1=\"", fixed(x_of(x), 1), "\" x2=\"", fixed(x_of(x), 1), "\" y1=\"", top,
               "\" y2=\"", top + plot_h, "\" stroke=\"#eee\"/>\n<text x=\"", fixed(x_of(x), 1),
               "\" y=\"", top + plot_h + 18, "\" text-anchor=\"middle\">", tick_label(x, x_step),
               "</text>\n");
  }
  svg += cat("<rect x=\"", left, "\" y=\"", top, "\" width=\"", plot_w, "\" height=\"", plot_h,
             "\" fill=\"none\" stroke=\"black\"/>\n<text x=\"", left + plot_w / 2, "\" y=\"",
             height - 10, "\" text-anchor=\"middle\">optimizer step</text>\n<text x=\"16\" y=\"",
             top + plot_h / 2, "\" text-anchor=\"middle\" transform=\"rotate(-90 16 ",
             top + plot_h / 2, ")\">loss</text>\n");

  struct Series {
    const char* name;
    const char* colour;
    std::optional<double> MetricsPoint::*value;
  };
  const Series series[] = {{"train loss", "#1f77b4", &MetricsPoint::loss},
                           {"validation loss", "#d62728", &MetricsPoint::val_loss}};
  double legend_y = top + 16;
  for (const auto& line : series) {
    std::string points;
    int count = 0;
    for (const auto& point : curve) {
      const auto& value = point.*line.value;
      if (!value || !std::isfinite(*value)) continue;
      points +=
          cat(fixed(x_of(static_cast<double>(point.step)), 1), ",", fixed(y_of(*value), 1), " ");
      ++count;
    }
    if (count == 0) continue;
    svg += cat("<polyline class=\"", line.name[0] == 't' ? "train" : "validation",
               "\" fill=\"none\" stroke=\"", line.colour, "\" stroke-width=\"2\" points=\"", points,
               "\"/>\n");
    if (count == 1 || line.value == &MetricsPoint::val_loss) {
      // Validation runs are sparse: mark every point.
      for (const auto& point : curve) {
        const auto& value = point.*line.value;
        if (!value || !std::isfinite(*value)) continue;
        svg += cat("<circle cx=\"", fixed(x_of(static_cast<double>(point.step)), 1), "\" cy=\"",
                   fixed(y_of(*value), 1), "\" r=\"3\" fill=\"", line.colour, "\"/>\n");
      }
    }
    svg += cat("<line x1=\"", left + plot_w - 150, "\" x2=\"", left + plot_w - 125, "\" y1=\"",
               legend_y - 4, "\" y2=\"", legend_y - 4, "\" stroke=\"", line.colour,
               "\" stroke-width=\"2\"/>\n<text x=\"", left + plot_w - 118, "\" y=\"", legend_y,
               "\">", line.name, "</text>\n");
    legend_y += 18;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace autotrain::cli
