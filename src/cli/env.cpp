// `autotrain env`: the rank topology of this launch, the devices and the build, as one table
// (or one JSON document) printed by rank 0. The first thing to run on a new machine or launcher.
// Given train's options (--config, --model, ...), also the model they resolve to: its family and
// shape, its parameter count, and where its first weights come from.
#include <gloo/config.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/comm/backend.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/launch/affinity.hpp"
#include "autotrain/launch/device.hpp"
#include "autotrain/launch/discover.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/model/folder.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/train/run_setup.hpp"
#include "gather_json.hpp"

#ifdef AUTOTRAIN_HAVE_NCCL
#include <nccl.h>
#endif

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

struct EnvOptions {
  bool json = false;
  bool help = false;
  int master_port = kDefaultMasterPort;
  std::vector<std::string> train_args;  // the rest: train's options, for the model section
};

po::options_description env_options(EnvOptions& options) {
  po::options_description description("autotrain env [options]");
  description.add_options()                                                                  //
      ("json", po::bool_switch(&options.json), "print one JSON document instead of tables")  //
      ("master-port", po::value(&options.master_port)->value_name("N"),
       "MASTER_PORT to export (default 29500)")  //
      ("help,h", po::bool_switch(&options.help), "show this help");
  return description;
}

// Every rank parses the same arguments, so a bad flag is a collective error. env's own options
// are taken out; what is left is train's.
EnvOptions parse_env_options(const std::vector<std::string>& args) {
  EnvOptions options;
  std::vector<std::string> own;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--json" || arg == "--help" || arg == "-h" || arg.starts_with("--master-port=")) {
      own.push_back(arg);
    } else if (arg == "--master-port") {
      own.push_back(arg);
      if (i + 1 < args.size()) own.push_back(args[++i]);
    } else {
      // A near miss of env's own options is a typo, not one of train's.
      const std::string hint = arg.starts_with("--") && arg.find('=') == std::string::npos
                                   ? did_you_mean(arg, {"--json", "--master-port", "--help"})
                                   : std::string();
      if (!hint.empty()) throw UsageError(cat("env: unknown option '", arg, "'", hint));
      options.train_args.push_back(arg);
    }
  }
  const po::options_description description = env_options(options);
  parse_command_options("env", description, own);
  if (options.master_port < 1 || options.master_port > 65535) {
    throw CollectiveError(
        cat("env: --master-port ", options.master_port, " is not a TCP port (expected 1..65535)"));
  }
  return options;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  AT_MPI_CHECK(MPI_Get_library_version(text, &length));
  text[MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
  // The length may count a terminating NUL; the text is NUL-terminated either way.
  const std::string full(text);
  return trim(full.substr(0, full.find('\n')));
}

json build_info() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  H5get_libversion(&major, &minor, &release);
#ifdef H5_HAVE_PARALLEL
  const bool hdf5_parallel = true;
#else
  const bool hdf5_parallel = false;
#endif
#ifdef AUTOTRAIN_HAVE_NCCL
  int nccl = 0;
  const std::string nccl_version = ncclGetVersion(&nccl) == ncclSuccess
                                       ? cat(nccl / 10000, ".", (nccl / 100) % 100, ".", nccl % 100)
                                       : std::string("unknown");
#else
  const std::string nccl_version = "not built";
#endif
  return {
      {"autotrain", version()},
      {"mpi", mpi_library_version()},
      {"hdf5", {{"version", cat(major, ".", minor, ".", release)}, {"parallel", hdf5_parallel}}},
      {"gloo", cat(GLOO_VERSION_MAJOR, ".", GLOO_VERSION_MINOR, ".", GLOO_VERSION_PATCH)},
      {"cuda", {{"runtime", cuda_runtime_version()}, {"driver", cuda_driver_version()}}},
      {"nccl", nccl_version},
      {"onednn", kernels::onednn_version()}};
}

json rank_row(const Topology& topology) {
  return {{"rank", topology.rank},
          {"local_rank", topology.local_rank},
          {"local_world_size", topology.local_world_size},
          {"node_rank", topology.node_rank},
          {"host", topology.hostname},
          {"pid", static_cast<long>(getpid())},
          {"device", topology.device},
          {"visible_gpus", topology.visible_gpus},
          {"cpu_affinity", format_cpu_list(cpu_affinity())},
          {"gemm_isa", kernels::cpu_gemm_isa()},
          {"bf16_native", kernels::cpu_has_native_bf16()},
          {"comm_backend_auto",
           comm_backend_name(resolve_comm_backend(CommBackend::automatic, topology))}};
}

// The model train's options resolve to; null without any.
json model_info(const std::vector<std::string>& train_args) {
  if (train_args.empty()) return nullptr;
  try {
    const auto command_line = config::parse_train_command_line(train_args);
    const config::ResolvedParams resolved =
        config::load_params(command_line.inputs(), model::folder_shape);
    const model::ModelConfig config = train::model_config(resolved);
    const model::ParamLayout layout(config);
    return {{"base_model", resolved.params.model},
            {"family", model::family_of(config).describe(config)},
            {"shape", model::summary(config)},
            {"parameters", layout.num_parameters()},
            {"weights", resolved.base_model.describe(resolved.params.seed)}};
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& error) {  // every rank reads the same files and flags
    throw CollectiveError(cat("env: ", error.what()));
  }
}

std::string device_name(int device) {
  return device < 0 ? "cpu" : cat("cuda:", device);
}

void print_tables(const json& report, std::ostream& out) {
  const std::string launcher = report["launcher"].get<std::string>();
  out << "autotrain " << report["build"]["autotrain"].get<std::string>() << " — "
      << report["world_size"] << " rank(s) on " << report["num_nodes"] << " node(s), "
      << (launcher == "singleton" ? std::string("started without a launcher (singleton)")
                                  : "started by " + launcher)
      << "\n"
      << "MASTER_ADDR=" << report["master_addr"].get<std::string>()
      << " MASTER_PORT=" << report["master_port"] << "\n\n";

  size_t host_width = 4;
  for (const json& row : report["ranks"]) {
    host_width = std::max(host_width, row["host"].get<std::string>().size());
  }
  const int host = static_cast<int>(host_width);
  out << std::right << std::setw(5) << "rank" << std::setw(7) << "local" << std::setw(6) << "node"
      << "  " << std::left << std::setw(host) << "host" << std::right << std::setw(9) << "pid"
      << "  " << std::left << std::setw(8) << "device"
      << "cpus\n";
  for (const json& row : report["ranks"]) {
    out << std::right << std::setw(5) << row["rank"].get<int>() << std::setw(7)
        << row["local_rank"].get<int>() << std::setw(6) << row["node_rank"].get<int>() << "  "
        << std::left << std::setw(host) << row["host"].get<std::string>() << std::right
        << std::setw(9) << row["pid"].get<long>() << "  " << std::left << std::setw(8)
        << device_name(row["device"].get<int>()) << row["cpu_affinity"].get<std::string>() << "\n";
  }

  const json& build = report["build"];
  const auto line = [&out](const char* name, const std::string& value) {
    out << "  " << std::left << std::setw(11) << name << value << "\n";
  };
  out << "\nbuild\n";
  line("MPI", build["mpi"].get<std::string>());
  line("HDF5", cat(build["hdf5"]["version"].get<std::string>(),
                   build["hdf5"]["parallel"].get<bool>() ? " (parallel)" : " (serial)"));
  line("Gloo", build["gloo"].get<std::string>());
  line("CUDA", cat("runtime ", build["cuda"]["runtime"].get<std::string>(), ", driver ",
                   build["cuda"]["driver"].get<std::string>()));
  line("NCCL", build["nccl"].get<std::string>());
  line("GPUs", cat(report["ranks"][0]["visible_gpus"].get<int>(), " visible to rank 0"));
  line("comm auto", report["comm_backend_auto"].get<std::string>());
  const json& rank0 = report["ranks"][0];
  line("gemm", cat("oneDNN ", build["onednn"].get<std::string>(), " on ",
                   rank0["gemm_isa"].get<std::string>(),
                   rank0["bf16_native"].get<bool>()
                       ? " (rank 0): bf16 native"
                       : " (rank 0): no native bf16, mixed_precision bf16 computes in fp32"));
  const json& model = report["model"];
  if (model.is_null()) return;
  out << "\nmodel\n";
  line("base", model["base_model"].get<std::string>());
  line("shape", model["shape"].get<std::string>());
  line("parameters", cat(model["parameters"].get<std::size_t>()));
  line("weights", model["weights"].get<std::string>());
}

}  // namespace

int run_env(const std::vector<std::string>& args, MpiSession& mpi) {
  EnvOptions options;
  const EnvOptions parsed = parse_env_options(args);
  if (parsed.help) {
    if (mpi.rank() == 0) {
      std::cout
          << "Shows how this launch maps to ranks, nodes and devices, and what autotrain was "
             "built with.\nRun it under the launcher you will train with, e.g.\n"
             "  mpirun -np 4 autotrain env\n  srun --mpi=pmix -n 2 autotrain env --json\n"
             "With train's options (autotrain env --config run.yaml), it also shows the model "
             "they\nresolve to: family, shape, parameters and where the weights come from.\n\n"
          << env_options(options);
    }
    return 0;
  }

  const json model = model_info(parsed.train_args);
  const Topology topology = discover_topology(MPI_COMM_WORLD, {.master_port = parsed.master_port});
  export_topology(topology);
  const std::vector<json> rows = gather_json(rank_row(topology), MPI_COMM_WORLD);
  if (topology.rank != 0) return 0;

  const json report = {{"world_size", topology.world_size},
                       {"num_nodes", topology.num_nodes},
                       {"launcher", topology.launcher},
                       {"master_addr", topology.master_addr},
                       {"master_port", topology.master_port},
                       {"comm_backend_auto", rows.front()["comm_backend_auto"]},
                       {"ranks", rows},
                       {"build", build_info()},
                       {"model", model}};
  if (parsed.json) {
    std::cout << report.dump(2) << std::endl;
  } else {
    print_tables(report, std::cout);
    std::cout << std::flush;
  }
  return 0;
}

}  // namespace autotrain::cli
