#include "autotrain/cli/launch_plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "autotrain/core/error.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/launch/affinity.hpp"
#include "autotrain/launch/device.hpp"

namespace autotrain::cli {
namespace {

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// A positive count from the environment; 0 when unset or not a plain number.
int env_count(const char* name) {
  const std::string text = env_text(name);
  if (text.empty() || !std::all_of(text.begin(), text.end(), ::isdigit)) return 0;
  return std::atoi(text.c_str());
}

bool has_flag(const std::vector<std::string>& args, std::string_view snake) {
  const std::string kebab = "--" + to_kebab_case(snake);
  const std::string underscored = "--" + std::string(snake);
  return std::any_of(args.begin(), args.end(), [&](const std::string& arg) {
    return arg == kebab || arg == underscored || arg.starts_with(kebab + "=") ||
           arg.starts_with(underscored + "=");
  });
}

std::string gpus_visible_text(const LaunchSituation& situation) {
  return cat(situation.visible_gpus, " GPU(s) visible on this node (CUDA_VISIBLE_DEVICES=",
             situation.cuda_visible_devices.empty() ? "unset" : situation.cuda_visible_devices,
             ")");
}

void check_request(const LaunchRequest& request, const LaunchSituation& situation) {
  const auto& args = request.command_args;
  AT_CHECK(!args.empty(),
           "launch: nothing to launch; give the command after '--', e.g. "
           "autotrain launch --num-gpus 2 -- train --config config.yaml");
  AT_CHECK(!args.front().starts_with("-"), "launch: '", args.front(),
           "' after '--' is not a command; write the command first, e.g. -- train --config x.yaml");
  AT_CHECK(args.front() != "launch", "launch: cannot launch 'launch' itself");
  if (!request.distributed_backend.empty()) {
    AT_CHECK(request.distributed_backend == "ddp" || request.distributed_backend == "deepspeed",
             "launch: --distributed-backend '", request.distributed_backend,
             "' is not supported; expected ddp or deepspeed");
    AT_CHECK(args.front() == "train", "launch: --distributed-backend applies to train, not to '",
             args.front(), "'");
    AT_CHECK(!has_flag(args, "distributed_backend"),
             "launch: --distributed-backend is given twice (to launch and to ", args.front(),
             "); keep one");
  }
  AT_CHECK(
      request.num_gpus >= -1 && request.num_nodes >= -1 && request.num_nodes != 0 &&
          request.num_processes >= -1 && request.num_processes != 0 && request.cpus_per_task >= 0,
      "launch: --num-gpus must be >= 0, --num-nodes, --num-processes and --cpus-per-task >= 1");
  AT_CHECK(request.num_processes == -1 || request.num_gpus <= 0,
           "launch: --num-processes sets CPU ranks; with GPUs there is one rank per GPU "
           "(--num-gpus ",
           request.num_gpus, "): drop one of them");
  AT_CHECK(!situation.in_slurm_step,
           "launch: already inside a Slurm job step (SLURM_STEP_ID is set): run 'autotrain launch' "
           "from the batch script or the salloc shell, not under srun");
}

}  // namespace

std::string_view launch_kind_name(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::cpu:
      return "CPU";
    case LaunchKind::single_gpu:
      return "single GPU";
    case LaunchKind::multi_gpu:
      return "several GPUs, one node";
    case LaunchKind::multi_node:
      return "several nodes";
  }
  return "?";
}

namespace {

// The allocation's nodes unless fewer are asked for; one outside an allocation.
int plan_nodes(const LaunchRequest& request, const LaunchSituation& situation, bool in_allocation) {
  const int num_nodes = request.num_nodes > 0 ? request.num_nodes : 1;
  if (request.write_sbatch) return num_nodes;
  if (in_allocation) {
    const int allocated = std::max(1, situation.slurm_nodes);
    const int nodes = request.num_nodes > 0 ? request.num_nodes : allocated;
    AT_CHECK(nodes <= allocated, "launch: --num-nodes ", nodes, " but Slurm job ",
             situation.slurm_job_id, " has ", allocated,
             " node(s); ask for more nodes (sbatch/salloc -N ", nodes, ") or launch on fewer");
    return nodes;
  }
  AT_CHECK(num_nodes == 1, "launch: --num-nodes ", num_nodes,
           " needs a Slurm allocation and this shell is not in one (SLURM_JOB_ID is unset); run "
           "it inside 'salloc -N ",
           num_nodes, "' or a batch job, or write a job script with --sbatch FILE");
  return num_nodes;
}

// The GPUs per node the ranks use: those asked for, else none when processes are asked for,
// else every visible one. Checked against the visible ones unless a job script is written.
int plan_gpus(const LaunchRequest& request, const LaunchSituation& situation) {
  int gpus = request.num_gpus;
  if (gpus < 0) gpus = request.num_processes > 0 ? 0 : situation.visible_gpus;
  if (gpus > 0 && !request.write_sbatch) {
    AT_CHECK(gpus <= situation.visible_gpus, "launch: --num-gpus ", gpus, " but only ",
             gpus_visible_text(situation), "; ask for at most ", situation.visible_gpus,
             situation.slurm_job_id.empty()
                 ? ", or run on a node with more GPUs"
                 : ", or request more GPUs per node (sbatch --gpus-per-node)",
             situation.visible_gpus == 0 ? "; --num-gpus 0 runs on the CPUs" : "");
  }
  return gpus;
}

// Ranks per node: one per GPU; on CPUs what was asked, else the allocation's tasks, else 1.
int plan_ranks_per_node(const LaunchRequest& request, const LaunchSituation& situation,
                        const LaunchPlan& plan, int gpus) {
  if (gpus > 0) return gpus;
  if (request.num_processes > 0) return request.num_processes;
  if (plan.in_allocation && situation.slurm_tasks_per_node > 0) {
    return situation.slurm_tasks_per_node;
  }
  if (plan.in_allocation && situation.slurm_tasks > 0 &&
      situation.slurm_tasks % plan.num_nodes == 0) {
    return situation.slurm_tasks / plan.num_nodes;
  }
  return 1;  // one rank using every core: no communication at all
}

LaunchKind launch_kind(int num_nodes, int gpus) {
  if (num_nodes > 1) return LaunchKind::multi_node;
  if (gpus == 0) return LaunchKind::cpu;
  return gpus == 1 ? LaunchKind::single_gpu : LaunchKind::multi_gpu;
}

int plan_threads_per_rank(const LaunchRequest& request, const LaunchSituation& situation,
                          const LaunchPlan& plan) {
  if (request.cpus_per_task > 0) return request.cpus_per_task;
  if (request.write_sbatch) return 0;  // the script divides the compute node's cores among ranks
  if (plan.in_allocation && situation.slurm_cpus_per_task > 0) {
    return situation.slurm_cpus_per_task;
  }
  return std::max(1, situation.cpu_cores / plan.ranks_per_node);
}

// srun inside an allocation or a job script, mpirun elsewhere.
std::vector<std::string> launcher_argv(const LaunchRequest& request,
                                       const LaunchSituation& situation, const LaunchPlan& plan,
                                       int gpus) {
  if (plan.in_allocation || request.write_sbatch) {
    std::vector<std::string> argv = {"srun", "--mpi=pmix", cat("--nodes=", plan.num_nodes),
                                     cat("--ntasks-per-node=", plan.ranks_per_node)};
    // Slurm 22.05's srun does not inherit the job's --cpus-per-task: pass it on.
    if (request.write_sbatch) {
      argv.push_back(plan.threads_per_rank > 0 ? "--cpus-per-task=${SLURM_CPUS_PER_TASK}"
                                               : "--cpus-per-task=${cpus_per_rank}");
    } else if (situation.slurm_cpus_per_task > 0) {
      argv.push_back(cat("--cpus-per-task=", situation.slurm_cpus_per_task));
    }
    return argv;
  }
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(plan.world_size)};
  if (situation.is_root) argv.push_back("--allow-run-as-root");
  if (plan.world_size > situation.cpu_cores) argv.push_back("--oversubscribe");
  // Open MPI binds each rank to one core when it starts two or fewer: a CPU rank would then
  // run its threads on that one core.
  if (gpus == 0) argv.insert(argv.end(), {"--bind-to", "none"});
  return argv;
}

// autotrain and its command after the launcher.
void append_command(const LaunchRequest& request, const LaunchSituation& situation, int gpus,
                    std::vector<std::string>& argv) {
  argv.push_back(situation.autotrain_path.empty() ? "autotrain" : situation.autotrain_path);
  argv.insert(argv.end(), request.command_args.begin(), request.command_args.end());
  if (!request.distributed_backend.empty()) {
    argv.insert(argv.end(), {"--distributed-backend", request.distributed_backend});
  }
  // CPU asked for on a machine with GPUs: say so to train, which would otherwise take them.
  if (gpus == 0 && situation.visible_gpus > 0 && request.command_args.front() == "train" &&
      !has_flag(request.command_args, "device")) {
    argv.insert(argv.end(), {"--device", "cpu"});
  }
}

}  // namespace

LaunchPlan plan_launch(const LaunchRequest& request, const LaunchSituation& situation) {
  check_request(request, situation);
  LaunchPlan plan;
  plan.in_allocation = !situation.slurm_job_id.empty() && !request.write_sbatch;
  plan.num_nodes = plan_nodes(request, situation, plan.in_allocation);
  const int gpus = plan_gpus(request, situation);
  plan.ranks_per_node = plan_ranks_per_node(request, situation, plan, gpus);
  plan.world_size = plan.num_nodes * plan.ranks_per_node;
  plan.kind = launch_kind(plan.num_nodes, gpus);
  plan.threads_per_rank = plan_threads_per_rank(request, situation, plan);
  plan.argv = launcher_argv(request, situation, plan, gpus);
  append_command(request, situation, gpus, plan.argv);
  return plan;
}

LaunchSituation detect_launch_situation() {
  LaunchSituation situation;
  situation.slurm_job_id = env_text("SLURM_JOB_ID");
  situation.in_slurm_step = !env_text("SLURM_STEP_ID").empty();
  situation.slurm_nodes = env_count("SLURM_NNODES");
  situation.slurm_tasks = env_count("SLURM_NTASKS");
  situation.slurm_tasks_per_node = env_count("SLURM_NTASKS_PER_NODE");
  situation.slurm_cpus_per_task = env_count("SLURM_CPUS_PER_TASK");
  situation.visible_gpus = visible_gpu_count();
  situation.cuda_visible_devices = env_text("CUDA_VISIBLE_DEVICES");
  situation.cpu_cores = std::max<int>(1, static_cast<int>(cpu_affinity().size()));
  situation.is_root = geteuid() == 0;
  situation.autotrain_path = executable_path().string();
  return situation;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::vector<std::string> quoted;
  for (const auto& word : words) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
    });
    // ${VAR} stays expandable (job scripts), everything else is single-quoted.
    const bool variable = word.find("${") != std::string::npos &&
                          word.find_first_of("'\"`\\ ;&|<>") == std::string::npos;
    if (plain) {
      quoted.push_back(word);
    } else if (variable) {
      quoted.push_back(cat('"', word, '"'));
    } else {
      std::string text = "'";
      for (char c : word) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
      quoted.push_back(text + "'");
    }
  }
  return join(quoted, " ");
}

std::string render_launch_plan(const LaunchPlan& plan) {
  return cat("autotrain launch: ", launch_kind_name(plan.kind), ", ", plan.num_nodes, " node(s) x ",
             plan.ranks_per_node, " rank(s) = ", plan.world_size, " rank(s), ",
             plan.threads_per_rank > 0
                 ? cat(plan.threads_per_rank, " core(s) per rank")
                 : std::string("the compute node's cores shared by its ranks"),
             ", ", plan.in_allocation ? "inside Slurm allocation (srun)" : "no allocation (mpirun)",
             "\n", shell_join(plan.argv), "\n");
}

std::string render_sbatch(const LaunchPlan& plan, const LaunchRequest& request) {
  const bool gpus = plan.kind != LaunchKind::cpu && request.num_gpus != 0;
  std::string script = cat(
      "#!/bin/bash\n"
      "# Written by 'autotrain launch --sbatch': ",
      launch_kind_name(plan.kind), ", ", plan.num_nodes, " node(s) x ", plan.ranks_per_node,
      " rank(s). Submit with: sbatch <this file>\n"
      "# Sites usually change --partition, --account and --time (docs/slurm.md). Preemptible:\n"
      "# SIGUSR1 (sent 300 s before the limit, or by preemption) makes the ranks checkpoint and\n"
      "# exit 3; the job then requeues itself and the next run resumes (resume_from_checkpoint\n"
      "# auto), as slurm/train-preemptible.sbatch does.\n"
      "#SBATCH --job-name=autotrain\n"
      "#SBATCH --nodes=",
      plan.num_nodes, "\n#SBATCH --ntasks-per-node=", plan.ranks_per_node, "\n");
  // Without --cpus-per-task the script takes whole nodes and divides their cores at run time:
  // the login node that writes it says nothing about the compute nodes' cores.
  script += plan.threads_per_rank > 0 ? cat("#SBATCH --cpus-per-task=", plan.threads_per_rank, "\n")
                                      : std::string("#SBATCH --exclusive\n");
  if (gpus) script += cat("#SBATCH --gpus-per-node=", plan.ranks_per_node, "\n");
  script +=
      cat("#SBATCH --time=01:00:00\n"
          "#SBATCH --signal=B:USR1@300\n"
          "#SBATCH --requeue\n"
          "#SBATCH --open-mode=append\n"
          "##SBATCH --partition=",
          gpus ? "gpu" : "cpu",
          "\n"
          "##SBATCH --account=myproject\n"
          "#SBATCH --output=autotrain-%j.out\n"
          "set -uo pipefail\n");
  script += plan.threads_per_rank > 0
                ? "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK}\n"
                : "cpus_per_rank=$(( SLURM_CPUS_ON_NODE / SLURM_NTASKS_PER_NODE ))\n"
                  "export OMP_NUM_THREADS=$cpus_per_rank\n";
  if (gpus) script += "# export NCCL_SOCKET_IFNAME=ib0   # the network NCCL should use\n";
  // srun in the background, so that this shell takes the signal and passes it on.
  script += cat(shell_join(plan.argv), " &\n",
                "srun_pid=$!\n"
                "trap 'kill -USR1 \"$srun_pid\" 2>/dev/null' USR1 TERM\n"
                "wait \"$srun_pid\"\n"
                "while kill -0 \"$srun_pid\" 2>/dev/null; do wait \"$srun_pid\"; done\n"
                "wait \"$srun_pid\"\n"
                "status=$?\n"
                "if [ \"$status\" -eq 3 ]; then  # checkpoint saved: run again from it\n"
                "  scontrol requeue \"$SLURM_JOB_ID\"\n"
                "  exit 0\n"
                "fi\n"
                "exit \"$status\"\n");
  return script;
}

}  // namespace autotrain::cli
