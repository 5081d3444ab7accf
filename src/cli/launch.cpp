// `autotrain launch [options] -- train ...`: plans the launch (srun inside a Slurm allocation,
// mpirun outside), prints the command and replaces itself with it (execvp), or writes a job
// script with --sbatch. Never starts MPI itself: the launcher it execs does.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/cli/launch_plan.hpp"
#include "autotrain/cli/options.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kUsage =
    "usage: autotrain launch [--num-gpus N] [--num-nodes M] [--num-processes P]\n"
    "                        [--distributed-backend ddp|deepspeed] [--dry-run] [--sbatch FILE]\n"
    "                        -- train --config config.yaml [train options]\n\n"
    "Inside a Slurm allocation (SLURM_JOB_ID set) it runs srun --mpi=pmix over the allocation's\n"
    "nodes; outside it runs mpirun on this node. One rank per GPU; on CPUs one rank using every\n"
    "core unless --num-processes says otherwise (inside an allocation: its tasks per node).\n\n";

}  // namespace

int run_launch(const std::vector<std::string>& args) {
  // Everything after the first "--" belongs to the launched command.
  const auto separator = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> own(args.begin(), separator);
  LaunchRequest request;
  if (separator != args.end()) request.command_args.assign(separator + 1, args.end());

  bool dry_run = false;
  bool help = false;
  std::string sbatch_file;
  po::options_description description("options");
  description.add_options()("help,h", po::bool_switch(&help), "show this help")(
      "num-gpus", po::value(&request.num_gpus),
      "GPUs (ranks) per node; default all visible, 0 = CPU")(
      "num-nodes", po::value(&request.num_nodes), "nodes; default the allocation's (1 outside)")(
      "num-processes", po::value(&request.num_processes), "CPU ranks per node")(
      "cpus-per-task", po::value(&request.cpus_per_task),
      "cores per rank in a --sbatch script; default this node's cores / ranks per node")(
      "distributed-backend", po::value(&request.distributed_backend),
      "ddp or deepspeed, passed to train")("dry-run", po::bool_switch(&dry_run),
                                           "print the command, do not run it")(
      "sbatch", po::value(&sbatch_file), "write a job script for the plan to FILE instead");
  parse_command_options("launch", description, own);
  if (help) {
    std::cout << kUsage << description;
    return 0;
  }
  request.write_sbatch = !sbatch_file.empty();

  const LaunchPlan plan = plan_launch(request, detect_launch_situation());
  if (request.write_sbatch) {
    std::ofstream out(sbatch_file);
    AT_CHECK(out, "launch: cannot write the job script '", sbatch_file,
             "': ", std::strerror(errno));
    out << render_sbatch(plan, request);
    out.close();
    AT_CHECK(out, "launch: writing the job script '", sbatch_file, "' failed");
    std::cout << "autotrain launch: wrote " << sbatch_file << " (" << plan.num_nodes
              << " node(s) x " << plan.ranks_per_node << " rank(s)); submit it with: sbatch "
              << sbatch_file << "\n";
    return 0;
  }
  if (dry_run) {
    std::cout << render_launch_plan(plan) << std::flush;
    return 0;
  }
  return exec_launch_plan(plan);
}

int exec_launch_plan(const LaunchPlan& plan) {
  std::cout << render_launch_plan(plan) << std::flush;
  std::vector<char*> argv;
  for (const auto& word : plan.argv) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  throw Error(cat("launch: cannot start '", plan.argv[0], "': ", std::strerror(errno),
                  plan.argv[0] == "srun" ? " (is Slurm's srun in PATH?)"
                                         : " (is Open MPI's mpirun in PATH? module load openmpi)"));
}

}  // namespace autotrain::cli
