// `autotrain ckpt inspect FILE` and `autotrain ckpt verify FILE`: what a checkpoint holds, and
// whether every dataset still matches the checksum written at save. Run alone or under mpirun
// (verification then splits the reading among the ranks); rank 0 prints.
#include <boost/program_options.hpp>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: autotrain ckpt inspect FILE   show step, run state, model config and datasets\n"
    "       autotrain ckpt verify FILE    check every dataset's checksum (exit 1 if any fails)\n";

struct CkptOptions {
  std::string action;
  std::string file;
  bool help = false;
};

CkptOptions parse_ckpt_options(const std::vector<std::string>& args) {
  CkptOptions options;
  po::options_description description("options");
  description.add_options()("help,h", po::bool_switch(&options.help), "show this help");
  po::options_description hidden;
  hidden.add_options()("action", po::value(&options.action))("file", po::value(&options.file));
  po::options_description all;
  all.add(description).add(hidden);
  po::positional_options_description positional;
  positional.add("action", 1).add("file", 1);
  parse_command_options("ckpt", all, args, positional);
  if (options.help) return options;
  const std::vector<std::string> actions = {"inspect", "verify"};
  if (options.action.empty()) throw CollectiveError(cat("ckpt: missing action\n", kUsage));
  if (options.action != "inspect" && options.action != "verify") {
    throw CollectiveError(cat("ckpt: unknown action '", options.action, "'",
                              did_you_mean(options.action, actions), "\n", kUsage));
  }
  if (options.file.empty()) {
    throw CollectiveError(cat("ckpt ", options.action, ": missing the checkpoint FILE\n", kUsage));
  }
  return options;
}

// A JSON object as "key=value, ..." on one line, cut at `limit` characters.
std::string summarise_json(const std::string& text, size_t limit = 160) {
  std::string line;
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    if (!json.is_object()) {
      line = json.dump();
    } else {
      std::vector<std::string> parts;
      for (const auto& [key, value] : json.items()) {
        parts.push_back(cat(key, "=", value.is_string() ? value.get<std::string>() : value.dump()));
      }
      line = join(parts, ", ");
    }
  } catch (const nlohmann::json::exception&) {
    line = text;
  }
  if (line.size() > limit) {
    line.resize(limit - 3);
    line.append(3, '.');
  }
  return line;
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::vector<std::string> dims;
  for (uint64_t dim : shape) dims.push_back(std::to_string(dim));
  return "[" + join(dims, ", ") + "]";
}

void print_inspection(const ckpt::CheckpointReader& reader, std::ostream& out) {
  const ckpt::CheckpointInfo& info = reader.info();
  out << "checkpoint        " << reader.path().string() << "\n"
      << "format            " << info.format << " version " << info.format_version << " (layout "
      << ckpt::layout_name(info.layout) << "), written by autotrain " << info.autotrain_version
      << "\n"
      << "step              " << info.step << "\n"
      << "epoch             " << info.epoch << "\n"
      << "consumed samples  " << info.consumed_samples << "\n"
      << "world size        " << info.world_size << "\n"
      << "ZeRO stage        " << info.zero_stage << "\n";
  for (const auto& [name, text] : info.json) {
    out << std::left << std::setw(18) << name << summarise_json(text) << "\n";
  }
  for (const auto& [name, rows] : info.per_rank) {
    out << std::left << std::setw(18) << name << rows.size() << " rows of "
        << (rows.empty() ? 0 : rows.front().size()) << " values (one per writing rank)\n";
  }
  size_t width = 7;
  for (const auto& dataset : info.datasets) width = std::max(width, dataset.name.size());
  out << "\n"
      << std::left << std::setw(static_cast<int>(width)) << "dataset"
      << "  " << std::setw(16) << "shape" << std::right << std::setw(14) << "elements"
      << std::setw(12) << "size"
      << "\n";
  for (const auto& dataset : info.datasets) {
    out << std::left << std::setw(static_cast<int>(width)) << dataset.name << "  " << std::setw(16)
        << shape_text(dataset.shape) << std::right << std::setw(14) << dataset.length
        << std::setw(12) << human_bytes(static_cast<double>(dataset.length * sizeof(float)))
        << "\n";
  }
  out << "\n"
      << info.datasets.size() << " datasets, "
      << human_bytes(static_cast<double>(info.total_bytes())) << " (" << info.total_bytes()
      << " bytes) of fp32\n";
}

}  // namespace

int run_ckpt(const std::vector<std::string>& args, MpiSession& mpi) {
  const CkptOptions options = parse_ckpt_options(args);
  if (options.help) {
    if (mpi.rank() == 0) std::cout << kUsage;
    return 0;
  }
  ckpt::CheckpointReader reader(options.file, MPI_COMM_WORLD);
  if (options.action == "inspect") {
    if (mpi.rank() == 0) print_inspection(reader, std::cout);
    return 0;
  }
  Timer timer;
  const std::vector<std::string> problems = reader.verify_checksums();
  if (mpi.rank() == 0) {
    const double bytes = static_cast<double>(reader.info().total_bytes());
    if (problems.empty()) {
      std::cout << "OK " << options.file << ": " << reader.info().datasets.size() << " datasets, "
                << human_bytes(bytes) << ", checksums verified in " << std::fixed
                << std::setprecision(2) << timer.seconds() << " s on " << mpi.size()
                << (mpi.size() == 1 ? " rank\n" : " ranks\n");
    } else {
      std::cout << "FAILED " << options.file << ": " << problems.size() << " of "
                << reader.info().datasets.size() << " datasets do not match their checksum\n";
      for (const auto& problem : problems) std::cout << "  " << problem << "\n";
    }
  }
  return problems.empty() ? 0 : 1;
}

}  // namespace autotrain::cli
