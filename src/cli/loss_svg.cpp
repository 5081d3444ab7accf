// The loss plot of `autotrain plot` (project_report.hpp): a self-contained SVG.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/cli/project_report.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli {

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
  return fixed_point(value, digits);
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

// The canvas, 800 x 480, and the plot area inside its margins. The right margin holds the
// learning-rate axis of the loss plot, or the legend of the models' plot.
struct Canvas {
  static constexpr double width = 800, height = 480, left = 70, top = 40, bottom = 50;
  double right = 80;
  double plot_w() const { return width - left - right; }
  double plot_h() const { return height - top - bottom; }
};

// The steps and the losses (training and validation) that the points span.
struct LossExtent {
  double step_min = INFINITY, step_max = -INFINITY, loss_min = INFINITY, loss_max = -INFINITY;

  void add(const MetricsPoint& point) {
    for (const auto& value : {point.loss, point.val_loss}) {
      if (!value || !std::isfinite(*value)) continue;
      step_min = std::min(step_min, static_cast<double>(point.step));
      step_max = std::max(step_max, static_cast<double>(point.step));
      loss_min = std::min(loss_min, *value);
      loss_max = std::max(loss_max, *value);
    }
  }
  bool empty() const { return !std::isfinite(step_min); }
  bool contains(long long step) const {
    return static_cast<double>(step) >= step_min && static_cast<double>(step) <= step_max;
  }
};

// Where a step and a loss land on the canvas, and the ticks of both axes. One step or one loss
// alone is widened to a range (one step; ±0.5) so that it has a place.
struct LossAxes {
  LossAxes(const Canvas& canvas_in, LossExtent extent) : canvas(canvas_in), steps(extent) {
    if (steps.step_max == steps.step_min) steps.step_max = steps.step_min + 1;
    if (steps.loss_max - steps.loss_min < 1e-9) {
      steps.loss_min -= 0.5;
      steps.loss_max += 0.5;
    }
    y_step = nice_step(steps.loss_min, steps.loss_max, 6);
    y_low = std::floor(steps.loss_min / y_step) * y_step;
    y_high = std::ceil(steps.loss_max / y_step) * y_step;
    x_step = nice_step(steps.step_min, steps.step_max, 8);
  }
  double x(double step) const {
    return canvas.left +
           (step - steps.step_min) / (steps.step_max - steps.step_min) * canvas.plot_w();
  }
  double y(double loss) const {
    return canvas.top + (y_high - loss) / (y_high - y_low) * canvas.plot_h();
  }

  Canvas canvas;
  LossExtent steps;  // as drawn (widened)
  double y_step = 0, y_low = 0, y_high = 0, x_step = 0;
};

// The two plots put their loss tick labels 4 px below the grid line in two ways; each keeps its.
enum class TickLabelShift { in_y, as_dy };

std::string svg_open(const Canvas& canvas, std::string_view title) {
  return cat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"",
      canvas.width, "\" height=\"", canvas.height, "\" viewBox=\"0 0 ", canvas.width, " ",
      canvas.height,
      "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"",
      canvas.width / 2, "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", escape_xml(title),
      "</text>\n");
}

// The grid lines and tick labels of both axes.
std::string grid(const LossAxes& axes, TickLabelShift shift) {
  const Canvas& canvas = axes.canvas;
  std::string svg;
  for (double y = axes.y_low; y <= axes.y_high + axes.y_step / 2; y += axes.y_step) {
    const std::string at = fixed_point(axes.y(y), 1);
    const std::string label_y = shift == TickLabelShift::in_y
                                    ? cat(fixed_point(axes.y(y) + 4, 1), "\"")
                                    : cat(at, "\" dy=\"4\"");
    svg += cat("<line x1=\"", canvas.left, "\" x2=\"", canvas.left + canvas.plot_w(), "\" y1=\"",
               at, "\" y2=\"", at, "\" stroke=\"#ddd\"/>\n<text x=\"", canvas.left - 6, "\" y=\"",
               label_y, " text-anchor=\"end\">", tick_label(y, axes.y_step), "</text>\n");
  }
  const double step_max = axes.steps.step_max;
  for (double x = std::ceil(axes.steps.step_min / axes.x_step) * axes.x_step;
       x <= step_max + axes.x_step / 100; x += axes.x_step) {
    const std::string at = fixed_point(axes.x(x), 1);
    svg += cat("<line x1=\"", at, "\" x2=\"", at, "\" y1=\"", canvas.top, "\" y2=\"",
               canvas.top + canvas.plot_h(), "\" stroke=\"#eee\"/>\n<text x=\"", at, "\" y=\"",
               canvas.top + canvas.plot_h() + 18, "\" text-anchor=\"middle\">",
               tick_label(x, axes.x_step), "</text>\n");
  }
  return svg;
}

// The plot area's border and the axis titles; `label_classes` names the titles for CSS.
std::string frame(const Canvas& canvas, std::string_view y_label, bool label_classes) {
  const double middle_y = canvas.top + canvas.plot_h() / 2;
  return cat("<rect x=\"", canvas.left, "\" y=\"", canvas.top, "\" width=\"", canvas.plot_w(),
             "\" height=\"", canvas.plot_h(), "\" fill=\"none\" stroke=\"black\"/>\n<text ",
             label_classes ? "class=\"x-axis-label\" " : "", "x=\"",
             canvas.left + canvas.plot_w() / 2, "\" y=\"", canvas.height - 10,
             "\" text-anchor=\"middle\">optimizer step</text>\n<text ",
             label_classes ? "class=\"y-axis-label\" " : "", "x=\"16\" y=\"", middle_y,
             "\" text-anchor=\"middle\" transform=\"rotate(-90 16 ", middle_y, ")\">", y_label,
             "</text>\n");
}

constexpr const char* kLrColour = "#2ca02c";
constexpr const char* kResumeColour = "#7f7f7f";

// The learning rate's axis at the right, from 0 (where schedules start and end) up, with room
// above its peak so that a constant rate does not run along the frame.
struct LrAxis {
  LrAxis(const Canvas& canvas_in, double lr_max) : canvas(canvas_in) {
    const double lr_top = lr_max > 0 ? lr_max * 1.05 : 1;
    step = nice_step(0, lr_top, 5);
    high = std::ceil(lr_top / step) * step;
  }
  double y(double lr) const { return canvas.top + (high - lr) / high * canvas.plot_h(); }

  // Ticks and labels on the right edge, in the curve's colour, and the axis title.
  std::string draw() const {
    std::string svg;
    const double axis_x = canvas.left + canvas.plot_w();
    for (double lr = 0; lr <= high + step / 2; lr += step) {
      char label[32];
      std::snprintf(label, sizeof label, "%.3g", lr);
      svg += cat("<line x1=\"", axis_x, "\" x2=\"", axis_x + 5, "\" y1=\"", fixed_point(y(lr), 1),
                 "\" y2=\"", fixed_point(y(lr), 1), "\" stroke=\"", kLrColour, "\"/>\n<text x=\"",
                 axis_x + 8, "\" y=\"", fixed_point(y(lr) + 4, 1), "\" fill=\"", kLrColour, "\">",
                 label, "</text>\n");
    }
    const double label_x = canvas.width - 12;
    const double middle_y = canvas.top + canvas.plot_h() / 2;
    svg += cat("<text class=\"y2-axis-label\" x=\"", label_x, "\" y=\"", middle_y,
               "\" text-anchor=\"middle\" fill=\"", kLrColour, "\" transform=\"rotate(90 ", label_x,
               " ", middle_y, ")\">learning rate</text>\n");
    return svg;
  }

  Canvas canvas;
  double step = 0, high = 0;
};

// The largest learning rate logged at the steps that have a loss; 0 when none is.
double largest_lr(const std::vector<MetricsPoint>& curve, const LossExtent& losses) {
  double lr_max = 0;
  for (const auto& point : curve) {
    if (!point.lr || !std::isfinite(*point.lr) || !losses.contains(point.step)) continue;
    lr_max = std::max(lr_max, *point.lr);
  }
  return lr_max;
}

bool has_lr(const std::vector<MetricsPoint>& curve, const LossExtent& losses) {
  return std::any_of(curve.begin(), curve.end(), [&](const MetricsPoint& point) {
    return point.lr && std::isfinite(*point.lr) && losses.contains(point.step);
  });
}

// Where each resumed run started: the steps after it were trained by that run.
std::string resume_lines(const LossAxes& axes, const std::vector<long long>& resumes) {
  const Canvas& canvas = axes.canvas;
  std::string svg;
  for (const long long step : resumes) {
    if (!axes.steps.contains(step)) continue;
    const std::string x = fixed_point(axes.x(static_cast<double>(step)), 1);
    svg += cat("<line class=\"resume\" x1=\"", x, "\" x2=\"", x, "\" y1=\"", canvas.top, "\" y2=\"",
               canvas.top + canvas.plot_h(), "\" stroke=\"", kResumeColour,
               "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\">", "<title>resumed at step ", step,
               "</title></line>\n<text x=\"", x, "\" y=\"", canvas.top - 4,
               "\" text-anchor=\"middle\" font-size=\"10\" fill=\"", kResumeColour, "\">resumed ",
               step, "</text>\n");
  }
  return svg;
}

// The loss plot's legend, top right inside the plot area, one row per entry.
class Legend {
 public:
  explicit Legend(const Canvas& canvas) : canvas_(canvas), y_(canvas.top + 16) {}
  std::string row(const char* name, const char* colour, const char* dash) {
    const double right = canvas_.left + canvas_.plot_w();
    std::string svg = cat("<line x1=\"", right - 150, "\" x2=\"", right - 125, "\" y1=\"", y_ - 4,
                          "\" y2=\"", y_ - 4, "\" stroke=\"", colour, "\" stroke-width=\"2\"", dash,
                          "/>\n<text x=\"", right - 118, "\" y=\"", y_, "\">", name, "</text>\n");
    y_ += 18;
    return svg;
  }

 private:
  Canvas canvas_;
  double y_;
};

// One series of the loss plot: training loss, validation loss or the learning rate.
struct Series {
  const char* name;
  const char* css_class;
  const char* colour;
  std::optional<double> MetricsPoint::*value;
};

// The series' line, and a dot on each of its points where they are sparse (validation runs, or
// one point alone); "" when it has no point in range.
std::string series_line(const std::vector<MetricsPoint>& curve, const Series& line,
                        const LossAxes& axes, const LrAxis& lr_axis) {
  const bool is_lr = line.value == &MetricsPoint::lr;
  const auto y = [&](double value) { return is_lr ? lr_axis.y(value) : axes.y(value); };
  std::string points;
  int count = 0;
  for (const auto& point : curve) {
    const auto& value = point.*line.value;
    if (!value || !std::isfinite(*value) || !axes.steps.contains(point.step)) continue;
    points += cat(fixed_point(axes.x(static_cast<double>(point.step)), 1), ",",
                  fixed_point(y(*value), 1), " ");
    ++count;
  }
  if (count == 0) return "";
  std::string svg =
      cat("<polyline class=\"", line.css_class, "\" fill=\"none\" stroke=\"", line.colour,
          "\" stroke-width=\"", is_lr ? "1.5" : "2", "\" points=\"", points, "\"/>\n");
  if (!is_lr && (count == 1 || line.value == &MetricsPoint::val_loss)) {
    for (const auto& point : curve) {
      const auto& value = point.*line.value;
      if (!value || !std::isfinite(*value)) continue;
      svg +=
          cat("<circle cx=\"", fixed_point(axes.x(static_cast<double>(point.step)), 1), "\" cy=\"",
              fixed_point(y(*value), 1), "\" r=\"3\" fill=\"", line.colour, "\"/>\n");
    }
  }
  return svg;
}

// One model of the models' plot: its training loss as a line and its validation loss as dots,
// grouped under its name, and its legend row at `legend_y` in the right margin; "" when it has
// no loss.
std::string model_curve(const NamedCurve& curve, const char* colour, const LossAxes& axes,
                        double legend_y) {
  const auto x_of = [&](double step) { return fixed_point(axes.x(step), 1); };
  const auto y_of = [&](double loss) { return fixed_point(axes.y(loss), 1); };
  std::string line;
  std::string dots;
  for (const auto& point : curve.points) {
    const std::string x = x_of(static_cast<double>(point.step));
    if (point.loss && std::isfinite(*point.loss)) line += cat(x, ",", y_of(*point.loss), " ");
    if (point.val_loss && std::isfinite(*point.val_loss)) {
      dots += cat("<circle cx=\"", x, "\" cy=\"", y_of(*point.val_loss), "\" r=\"3\" fill=\"",
                  colour, "\"/>\n");
    }
  }
  if (line.empty() && dots.empty()) return "";
  const double right = axes.canvas.left + axes.canvas.plot_w();
  return cat("<g class=\"model\"><title>", escape_xml(curve.name),
             "</title>\n<polyline fill=\"none\" stroke=\"", colour,
             "\" stroke-width=\"2\" points=\"", line, "\"/>\n", dots, "</g>\n<line x1=\"",
             right + 12, "\" x2=\"", right + 32, "\" y1=\"", legend_y - 4, "\" y2=\"", legend_y - 4,
             "\" stroke=\"", colour, "\" stroke-width=\"2\"/>\n<text class=\"legend\" x=\"",
             right + 38, "\" y=\"", legend_y, "\">", escape_xml(curve.name), "</text>\n");
}

}  // namespace

std::string render_loss_svg(const std::vector<MetricsPoint>& curve,
                            const std::vector<long long>& resumes, std::string_view title) {
  LossExtent losses;
  for (const auto& point : curve) losses.add(point);
  AT_CHECK(!losses.empty(), "plot: metrics.jsonl has no loss values yet; nothing to draw");
  const Canvas canvas{.right = 80};
  const LossAxes axes(canvas, losses);
  // The learning rate and the resumes are drawn over the steps that have a loss.
  const bool any_lr = has_lr(curve, losses);
  const LrAxis lr_axis(canvas, largest_lr(curve, losses));

  std::string svg = svg_open(canvas, title) + grid(axes, TickLabelShift::in_y) +
                    frame(canvas, "loss", /*label_classes=*/true);
  if (any_lr) svg += lr_axis.draw();
  svg += resume_lines(axes, resumes);
  const Series series[] = {{"train loss", "train", "#1f77b4", &MetricsPoint::loss},
                           {"validation loss", "validation", "#d62728", &MetricsPoint::val_loss},
                           {"learning rate", "lr", kLrColour, &MetricsPoint::lr}};
  Legend legend(canvas);
  for (const auto& line : series) {
    if (line.value == &MetricsPoint::lr && !any_lr) continue;
    const std::string drawn = series_line(curve, line, axes, lr_axis);
    if (drawn.empty()) continue;
    svg += drawn + legend.row(line.name, line.colour, "");
  }
  if (std::any_of(resumes.begin(), resumes.end(),
                  [&](long long step) { return axes.steps.contains(step); }))
    svg += legend.row("resumed", kResumeColour, " stroke-dasharray=\"6 4\"");
  svg += "</svg>\n";
  return svg;
}

std::string render_models_svg(const std::vector<NamedCurve>& curves, std::string_view title) {
  constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  LossExtent losses;
  for (const auto& curve : curves) {
    for (const auto& point : curve.points) losses.add(point);
  }
  AT_CHECK(!losses.empty(), "plot: no model has a loss value yet; nothing to draw");
  const Canvas canvas{.right = 200};
  const LossAxes axes(canvas, losses);
  std::string svg = svg_open(canvas, title) + grid(axes, TickLabelShift::as_dy) +
                    frame(canvas, "loss (line: train, dots: validation)", /*label_classes=*/false);
  double legend_y = canvas.top + 12;
  size_t drawn = 0;
  for (const auto& curve : curves) {
    const std::string model =
        model_curve(curve, kColours[drawn % std::size(kColours)], axes, legend_y);
    if (model.empty()) continue;
    svg += model;
    legend_y += 18;
    ++drawn;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace autotrain::cli
