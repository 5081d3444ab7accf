#pragma once
// Launch planning for `autotrain launch`: from what the user asks (GPUs, nodes, backend) and what
// the machine says (inside a Slurm allocation or not, GPUs visible, cores), the one command that
// starts the ranks — `srun --mpi=pmix ...` inside an allocation, `mpirun -np ...` outside — or a
// ready job script. Pure functions: the environment is read once, by detect_launch_situation().
//
// Invariant: world_size = num_nodes * ranks_per_node, one rank per GPU on GPU runs.
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::cli {

struct LaunchRequest {
  int num_gpus = -1;       // GPUs (= ranks) per node; -1 = all visible; 0 = CPU
  int num_nodes = -1;      // -1 = the allocation's nodes (1 outside an allocation)
  int num_processes = -1;  // CPU runs: ranks per node; -1 = the allocation's tasks per node, else 1
  int cpus_per_task = 0;   // job scripts: cores per rank; 0 = this node's cores / ranks per node
  std::string distributed_backend;        // "", "ddp" or "deepspeed": passed to train
  bool write_sbatch = false;              // plan a job script instead of a command to run now
  std::vector<std::string> command_args;  // after `--`: "train", "--config", "x.yaml", ...
};

// What the launch sees. SLURM_* values are 0 when unset.
struct LaunchSituation {
  std::string slurm_job_id;          // "" = not inside an allocation
  bool in_slurm_step = false;        // under srun already (SLURM_STEP_ID set, not the batch step)
  int slurm_nodes = 0;               // SLURM_NNODES
  int slurm_tasks = 0;               // SLURM_NTASKS
  int slurm_tasks_per_node = 0;      // SLURM_NTASKS_PER_NODE (only when the job gave it)
  int slurm_cpus_per_task = 0;       // SLURM_CPUS_PER_TASK (srun 22.05 does not inherit it)
  int visible_gpus = 0;              // on this node
  std::string cuda_visible_devices;  // for messages; "" when unset
  int cpu_cores = 1;                 // this process's affinity
  bool is_root = false;              // Open MPI refuses root without --allow-run-as-root
  std::string autotrain_path;        // the binary to start (this one)
};

enum class LaunchKind { cpu, single_gpu, multi_gpu, multi_node };

struct LaunchPlan {
  LaunchKind kind = LaunchKind::cpu;
  bool in_allocation = false;
  int num_nodes = 1;
  int ranks_per_node = 1;
  int world_size = 1;
  // Cores per rank, what train derives from its affinity. 0 in a job script without
  // --cpus-per-task: the compute node's cores decide (SLURM_CPUS_ON_NODE), not this node's.
  int threads_per_rank = 1;
  std::vector<std::string> argv;  // launcher + autotrain + command; argv[0] is looked up in PATH
};

std::string_view launch_kind_name(LaunchKind kind);  // "cpu", "single GPU", ...

// Builds the plan. Throws Error for inconsistent requests (more GPUs than visible, several nodes
// outside an allocation, more nodes than allocated, ...) with a message saying what to do.
LaunchPlan plan_launch(const LaunchRequest& request, const LaunchSituation& situation);

// Reads SLURM_*, CUDA_VISIBLE_DEVICES, the affinity, the uid and the GPU count of this process.
LaunchSituation detect_launch_situation();

// A job script (#SBATCH lines from the plan, srun --mpi=pmix of the same command).
std::string render_sbatch(const LaunchPlan& plan, const LaunchRequest& request);

// The plan as launch prints it: one summary line, then the command, shell-quoted.
std::string render_launch_plan(const LaunchPlan& plan);

// Prints the plan and replaces this process with its command (execvp); returns only by
// throwing an Error naming the launcher it could not start (src/cli/launch.cpp).
int exec_launch_plan(const LaunchPlan& plan);

// `words` joined by spaces, each quoted for a POSIX shell only when it needs it.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace autotrain::cli
