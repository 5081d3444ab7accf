// The loss plot of `autotrain plot` (project_report.hpp): a self-contained SVG.
#include <algorithm>
#include <cmath>
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

}  // namespace

std::string render_loss_svg(const std::vector<MetricsPoint>& curve,
                            const std::vector<long long>& resumes, std::string_view title) {
  // Canvas 800 x 480; plot area inside the margins (the right one holds the learning-rate axis).
  constexpr double width = 800, height = 480, left = 70, right = 80, top = 40, bottom = 50;
  constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  double step_min = 0, step_max = 0, loss_min = INFINITY, loss_max = -INFINITY, lr_max = 0;
  bool any = false, any_lr = false;
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
  // The learning rate and the resumes are drawn over the steps that have a loss.
  const auto in_range = [&](long long step) {
    return static_cast<double>(step) >= step_min && static_cast<double>(step) <= step_max;
  };
  for (const auto& point : curve) {
    if (!point.lr || !std::isfinite(*point.lr) || !in_range(point.step)) continue;
    any_lr = true;
    lr_max = std::max(lr_max, *point.lr);
  }
  if (step_max == step_min) step_max = step_min + 1;
  if (loss_max - loss_min < 1e-9) {
    loss_min -= 0.5;
    loss_max += 0.5;
  }
  const double y_step = nice_step(loss_min, loss_max, 6);
  const double y_low = std::floor(loss_min / y_step) * y_step;
  const double y_high = std::ceil(loss_max / y_step) * y_step;
  const double x_step = nice_step(step_min, step_max, 8);
  // The learning rate from 0 (where schedules start and end) up, with room above its peak so
  // that a constant rate does not run along the frame.
  const double lr_top = lr_max > 0 ? lr_max * 1.05 : 1;
  const double lr_step = nice_step(0, lr_top, 5);
  const double lr_high = std::ceil(lr_top / lr_step) * lr_step;
  auto x_of = [&](double step) {
    return left + (step - step_min) / (step_max - step_min) * plot_w;
  };
  auto y_of = [&](double loss) { return top + (y_high - loss) / (y_high - y_low) * plot_h; };
  auto y_of_lr = [&](double lr) { return top + (lr_high - lr) / lr_high * plot_h; };

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
    svg += cat("<line x1=\"", left, "\" x2=\"", left + plot_w, "\" y1=\"", fixed_point(y_of(y), 1),
               "\" y2=\"", fixed_point(y_of(y), 1), "\" stroke=\"#ddd\"/>\n<text x=\"", left - 6,
               "\" y=\"", fixed_point(y_of(y) + 4, 1), "\" text-anchor=\"end\">",
               tick_label(y, y_step), "</text>\n");
  }
  for (double x = std::ceil(step_min / x_step) * x_step; x <= step_max + x_step / 100;
       x += x_step) {
    svg += cat("<line x1=\"", fixed_point(x_of(x), 1), "\" x2=\"", fixed_point(x_of(x), 1),
               "\" y1=\"", top, "\" y2=\"", top + plot_h, "\" stroke=\"#eee\"/>\n<text x=\"",
               fixed_point(x_of(x), 1), "\" y=\"", top + plot_h + 18, "\" text-anchor=\"middle\">",
               tick_label(x, x_step), "</text>\n");
  }
  const double middle_y = top + plot_h / 2;
  svg += cat(
      "<rect x=\"", left, "\" y=\"", top, "\" width=\"", plot_w, "\" height=\"", plot_h,
      "\" fill=\"none\" stroke=\"black\"/>\n<text class=\"x-axis-label\" x=\"", left + plot_w / 2,
      "\" y=\"", height - 10,
      "\" text-anchor=\"middle\">optimizer step</text>\n<text class=\"y-axis-label\" x=\"16\" y=\"",
      middle_y, "\" text-anchor=\"middle\" transform=\"rotate(-90 16 ", middle_y,
      ")\">loss</text>\n");

  constexpr const char* lr_colour = "#2ca02c";
  if (any_lr) {
    // The second axis: ticks and labels on the right edge, in the curve's colour.
    const double axis_x = left + plot_w;
    for (double lr = 0; lr <= lr_high + lr_step / 2; lr += lr_step) {
      char label[32];
      std::snprintf(label, sizeof label, "%.3g", lr);
      svg +=
          cat("<line x1=\"", axis_x, "\" x2=\"", axis_x + 5, "\" y1=\"",
              fixed_point(y_of_lr(lr), 1), "\" y2=\"", fixed_point(y_of_lr(lr), 1), "\" stroke=\"",
              lr_colour, "\"/>\n<text x=\"", axis_x + 8, "\" y=\"", fixed_point(y_of_lr(lr) + 4, 1),
              "\" fill=\"", lr_colour, "\">", label, "</text>\n");
    }
    const double label_x = width - 12;
    svg += cat("<text class=\"y2-axis-label\" x=\"", label_x, "\" y=\"", middle_y,
               "\" text-anchor=\"middle\" fill=\"", lr_colour, "\" transform=\"rotate(90 ", label_x,
               " ", middle_y, ")\">learning rate</text>\n");
  }

  // Where each resumed run started: the steps after it were trained by that run.
  for (const long long step : resumes) {
    if (!in_range(step)) continue;
    const std::string x = fixed_point(x_of(static_cast<double>(step)), 1);
    svg += cat("<line class=\"resume\" x1=\"", x, "\" x2=\"", x, "\" y1=\"", top, "\" y2=\"",
               top + plot_h, "\" stroke=\"#7f7f7f\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\">",
               "<title>resumed at step ", step, "</title></line>\n<text x=\"", x, "\" y=\"",
               top - 4, "\" text-anchor=\"middle\" font-size=\"10\" fill=\"#7f7f7f\">resumed ",
               step, "</text>\n");
  }

  struct Series {
    const char* name;
    const char* css_class;
    const char* colour;
    std::optional<double> MetricsPoint::*value;
  };
  const Series series[] = {{"train loss", "train", "#1f77b4", &MetricsPoint::loss},
                           {"validation loss", "validation", "#d62728", &MetricsPoint::val_loss},
                           {"learning rate", "lr", lr_colour, &MetricsPoint::lr}};
  double legend_y = top + 16;
  const auto legend = [&](const char* name, const char* colour, const char* dash) {
    svg += cat("<line x1=\"", left + plot_w - 150, "\" x2=\"", left + plot_w - 125, "\" y1=\"",
               legend_y - 4, "\" y2=\"", legend_y - 4, "\" stroke=\"", colour,
               "\" stroke-width=\"2\"", dash, "/>\n<text x=\"", left + plot_w - 118, "\" y=\"",
               legend_y, "\">", name, "</text>\n");
    legend_y += 18;
  };
  for (const auto& line : series) {
    const bool is_lr = line.value == &MetricsPoint::lr;
    if (is_lr && !any_lr) continue;
    const auto y = [&](double value) { return is_lr ? y_of_lr(value) : y_of(value); };
    std::string points;
    int count = 0;
    for (const auto& point : curve) {
      const auto& value = point.*line.value;
      if (!value || !std::isfinite(*value) || !in_range(point.step)) continue;
      points += cat(fixed_point(x_of(static_cast<double>(point.step)), 1), ",",
                    fixed_point(y(*value), 1), " ");
      ++count;
    }
    if (count == 0) continue;
    svg += cat("<polyline class=\"", line.css_class, "\" fill=\"none\" stroke=\"", line.colour,
               "\" stroke-width=\"", is_lr ? "1.5" : "2", "\" points=\"", points, "\"/>\n");
    if (!is_lr && (count == 1 || line.value == &MetricsPoint::val_loss)) {
      // Validation runs are sparse: mark every point.
      for (const auto& point : curve) {
        const auto& value = point.*line.value;
        if (!value || !std::isfinite(*value)) continue;
        svg +=
            cat("<circle cx=\"", fixed_point(x_of(static_cast<double>(point.step)), 1), "\" cy=\"",
                fixed_point(y(*value), 1), "\" r=\"3\" fill=\"", line.colour, "\"/>\n");
      }
    }
    legend(line.name, line.colour, "");
  }
  if (std::any_of(resumes.begin(), resumes.end(), in_range))
    legend("resumed", "#7f7f7f", " stroke-dasharray=\"6 4\"");
  svg += "</svg>\n";
  return svg;
}

std::string render_models_svg(const std::vector<NamedCurve>& curves, std::string_view title) {
  constexpr double width = 800, height = 480, left = 70, right = 200, top = 40, bottom = 50;
  constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
  constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  double step_min = INFINITY, step_max = -INFINITY, loss_min = INFINITY, loss_max = -INFINITY;
  for (const auto& curve : curves) {
    for (const auto& point : curve.points) {
      for (const auto& value : {point.loss, point.val_loss}) {
        if (!value || !std::isfinite(*value)) continue;
        step_min = std::min(step_min, static_cast<double>(point.step));
        step_max = std::max(step_max, static_cast<double>(point.step));
        loss_min = std::min(loss_min, *value);
        loss_max = std::max(loss_max, *value);
      }
    }
  }
  AT_CHECK(std::isfinite(step_min), "plot: no model has a loss value yet; nothing to draw");
  if (step_max == step_min) step_max = step_min + 1;
  if (loss_max - loss_min < 1e-9) {
    loss_min -= 0.5;
    loss_max += 0.5;
  }
  const double y_step = nice_step(loss_min, loss_max, 6);
  const double y_low = std::floor(loss_min / y_step) * y_step;
  const double y_high = std::ceil(loss_max / y_step) * y_step;
  const double x_step = nice_step(step_min, step_max, 8);
  const auto x_of = [&](double step) {
    return fixed_point(left + (step - step_min) / (step_max - step_min) * plot_w, 1);
  };
  const auto y_of = [&](double loss) {
    return fixed_point(top + (y_high - loss) / (y_high - y_low) * plot_h, 1);
  };
  std::string svg =
      cat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
          "width=\"",
          width, "\" height=\"", height, "\" viewBox=\"0 0 ", width, " ", height,
          "\" font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"",
          width / 2, "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", escape_xml(title),
          "</text>\n");
  for (double y = y_low; y <= y_high + y_step / 2; y += y_step) {
    svg += cat("<line x1=\"", left, "\" x2=\"", left + plot_w, "\" y1=\"", y_of(y), "\" y2=\"",
               y_of(y), "\" stroke=\"#ddd\"/>\n<text x=\"", left - 6, "\" y=\"", y_of(y),
               "\" dy=\"4\" text-anchor=\"end\">", tick_label(y, y_step), "</text>\n");
  }
  for (double x = std::ceil(step_min / x_step) * x_step; x <= step_max + x_step / 100;
       x += x_step) {
    svg += cat("<line x1=\"", x_of(x), "\" x2=\"", x_of(x), "\" y1=\"", top, "\" y2=\"",
               top + plot_h, "\" stroke=\"#eee\"/>\n<text x=\"", x_of(x), "\" y=\"",
               top + plot_h + 18, "\" text-anchor=\"middle\">", tick_label(x, x_step), "</text>\n");
  }
  const double middle_y = top + plot_h / 2;
  svg += cat("<rect x=\"", left, "\" y=\"", top, "\" width=\"", plot_w, "\" height=\"", plot_h,
             "\" fill=\"none\" stroke=\"black\"/>\n<text x=\"", left + plot_w / 2, "\" y=\"",
             height - 10, "\" text-anchor=\"middle\">optimizer step</text>\n<text x=\"16\" y=\"",
             middle_y, "\" text-anchor=\"middle\" transform=\"rotate(-90 16 ", middle_y,
             ")\">loss (line: train, dots: validation)</text>\n");
  double legend_y = top + 12;
  size_t drawn = 0;
  for (const auto& curve : curves) {
    const char* colour = kColours[drawn % std::size(kColours)];
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
    if (line.empty() && dots.empty()) continue;
    svg += cat("<g class=\"model\"><title>", escape_xml(curve.name),
               "</title>\n<polyline fill=\"none\" stroke=\"", colour,
               "\" stroke-width=\"2\" points=\"", line, "\"/>\n", dots, "</g>\n<line x1=\"",
               left + plot_w + 12, "\" x2=\"", left + plot_w + 32, "\" y1=\"", legend_y - 4,
               "\" y2=\"", legend_y - 4, "\" stroke=\"", colour,
               "\" stroke-width=\"2\"/>\n<text class=\"legend\" x=\"", left + plot_w + 38,
               "\" y=\"", legend_y, "\">", escape_xml(curve.name), "</text>\n");
    legend_y += 18;
    ++drawn;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace autotrain::cli
