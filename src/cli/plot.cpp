// `autotrain plot PROJECT`: the loss curves (train and validation against the step, the
// learning rate on a second axis, a dashed line where each resumed run started) as
// <project>/loss.svg, drawn by our own code, and loss.png when rsvg-convert or ImageMagick's
// convert is installed (the PNG is a convenience; the SVG is always written).
#include <fstream>
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/cli/project_report.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::cli {
namespace {

namespace fs = std::filesystem;

// Runs `argv` (looked up in PATH) with its output discarded; true when it exits 0 in time.
bool run_quietly(const std::vector<std::string>& argv) {
  constexpr double kConverterTimeoutSeconds = 60;
  const CommandResult result = run_command(argv, kConverterTimeoutSeconds);
  return result.started && !result.timed_out && result.exit_status == 0;
}

// The first converter that works, or "" when none does.
std::string svg_to_png(const fs::path& svg, const fs::path& png) {
  if (run_quietly({"rsvg-convert", "-o", png.string(), svg.string()}) && fs::exists(png)) {
    return "rsvg-convert";
  }
  if (run_quietly({"convert", svg.string(), png.string()}) && fs::exists(png)) return "convert";
  return "";
}

void write_png(const fs::path& svg_path) {
  fs::path png_path = svg_path;
  png_path.replace_extension(".png");
  const std::string converter = svg_to_png(svg_path, png_path);
  if (converter.empty()) {
    std::cout << "no PNG: neither rsvg-convert nor ImageMagick's convert worked (install "
                 "librsvg2-bin for PNGs); the SVG opens in any browser\n";
  } else {
    std::cout << "wrote " << png_path.string() << " (" << converter << ")\n";
  }
}

void write_svg(const fs::path& path, const std::string& svg) {
  std::ofstream out(path);
  AT_CHECK(out, "plot: cannot write ", path.string());
  out << svg;
  AT_CHECK(out.flush(), "plot: writing ", path.string(), " failed");
}

// A project of several models: every model's loss in one SVG, a legend naming each.
int plot_models(const fs::path& project, const std::vector<SweepEntry>& models,
                const std::string& output, bool no_png) {
  std::vector<NamedCurve> curves;
  for (const auto& model : models) {
    const fs::path metrics = model.folder / "metrics.jsonl";
    if (!fs::exists(metrics)) continue;  // not started yet
    curves.push_back({model.label, latest_per_step(read_metrics(metrics).points)});
  }
  const fs::path svg_path = output.empty() ? project / "loss.svg" : fs::path(output);
  write_svg(svg_path, render_models_svg(curves, cat(project.filename().string(), ": loss of ",
                                                    models.size(), " models")));
  std::cout << "wrote " << svg_path.string() << " (" << curves.size() << " of " << models.size()
            << " models have started)\n";
  if (!no_png) write_png(svg_path);
  return 0;
}

}  // namespace

int run_plot(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  bool help = false;
  bool no_png = false;
  std::string output;
  po::options_description description("options");
  description.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "output,o", po::value(&output), "SVG file to write; default PROJECT/loss.svg")(
      "no-png", po::bool_switch(&no_png), "do not convert to PNG");
  std::vector<std::string> flags;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].starts_with("-")) {
      positional.push_back(args[i]);
      continue;
    }
    flags.push_back(args[i]);
    if ((args[i] == "--output" || args[i] == "-o") && i + 1 < args.size())
      flags.push_back(args[++i]);
  }
  parse_command_options("plot", description, flags);
  if (help) {
    std::cout << "usage: autotrain plot PROJECT [--output FILE.svg] [--no-png]\n\n" << description;
    return 0;
  }
  AT_CHECK(positional.size() == 1, "plot: give one project folder, e.g. autotrain plot my-run");
  const fs::path project = positional.front();
  if (const auto sweep = read_sweep(project)) return plot_models(project, *sweep, output, no_png);
  const fs::path metrics = project / "metrics.jsonl";
  AT_CHECK(fs::exists(metrics), "plot: ", metrics.string(),
           " does not exist; give the folder of a run that has started (its project_name)");
  const MetricsHistory history = read_metrics(metrics);
  const auto curve = latest_per_step(history.points);
  const fs::path svg_path = output.empty() ? project / "loss.svg" : fs::path(output);
  {
    std::ofstream out(svg_path);
    AT_CHECK(out, "plot: cannot write ", svg_path.string());
    out << render_loss_svg(curve, resume_steps(history),
                           cat(project.filename().string(), ": loss"));
    AT_CHECK(out.flush(), "plot: writing ", svg_path.string(), " failed");
  }
  const size_t resumes = resume_steps(history).size();
  std::cout << "wrote " << svg_path.string() << " (" << curve.size() << " steps"
            << (resumes > 0 ? cat(", ", resumes, " resume(s) marked") : std::string()) << ")\n";
  if (!no_png) write_png(svg_path);
  return 0;
}

}  // namespace autotrain::cli
