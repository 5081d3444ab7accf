// `autotrain status PROJECT [--json]`: progress of a running or finished run, read from its
// project folder, and the state of its Slurm job (squeue, then sacct, with a timeout) — what a
// batch user checks from a login node.
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/cli/project_report.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli {

int run_status(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  bool help = false;
  bool json = false;
  std::vector<std::string> projects;
  po::options_description description("options");
  description.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "json", po::bool_switch(&json), "one JSON object per project instead of text")(
      "project", po::value(&projects), "project folder(s)");
  std::vector<std::string> flags;
  std::vector<std::string> positional;
  for (const auto& arg : args) (arg.starts_with("-") ? flags : positional).push_back(arg);
  parse_command_options("status", description, flags);
  if (help) {
    std::cout << "usage: autotrain status PROJECT... [--json]\n\n"
                 "Reads the project folder (metrics.jsonl, checkpoints, the exported model) and "
                 "asks Slurm\n(squeue, then sacct) about the job that the latest run recorded.\n\n"
              << description;
    return 0;
  }
  AT_CHECK(!positional.empty(), "status: give the project folder, e.g. autotrain status my-run");
  for (size_t i = 0; i < positional.size(); ++i) {
    const auto sweep = read_sweep(positional[i]);
    if (!sweep) {
      const ProjectStatus status = read_project_status(positional[i]);
      std::cout << (json ? render_status_json(status)
                         : cat(i > 0 ? "\n" : "", render_status(status)));
      continue;
    }
    // Several models in one allocation: each model's folder is a project of its own.
    if (!json) {
      std::cout << (i > 0 ? "\n" : "") << positional[i] << ": " << sweep->size()
                << " models (sweep.json)\n";
    }
    for (const auto& model : *sweep) {
      const ProjectStatus status = read_project_status(model.folder);
      std::cout << (json ? render_status_json(status)
                         : cat("\n== ", model.label, " (sweep.json: ", model.status, ")\n",
                               render_status(status)));
    }
  }
  return 0;
}

}  // namespace autotrain::cli
