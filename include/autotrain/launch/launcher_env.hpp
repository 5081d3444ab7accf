#pragma once
// What the launcher says about this process, read from its environment variables. This is the
// one place that maps launcher variables (STYLE.md): everything here is pure and takes the
// environment as a lookup function, so it is tested with fake environments.
//
// Which launchers are believed, and why (docs/launching.md, "Environment variables"):
//   Open MPI   OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE
//   Slurm      SLURM_PROCID, SLURM_STEP_NUM_TASKS|SLURM_NTASKS, SLURM_LOCALID,
//              SLURM_STEP_TASKS_PER_NODE|SLURM_TASKS_PER_NODE, SLURM_NODEID,
//              SLURM_STEP_NUM_NODES|SLURM_NNODES — only inside a job step (SLURM_STEP_ID set to
//              an ordinary step number) that no mpirun-style launcher started: under mpirun
//              inside sbatch the SLURM_* variables describe the batch script or mpirun's own
//              daemons, not the ranks.
//   MPICH      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (Hydra)
//   PMIx       PMIX_RANK
//   MVAPICH    MV2_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE
//   exported   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK|NODE_RANK,
//              GROUP_WORLD_SIZE (torchrun, or an earlier export by autotrain itself)
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/launch/topology.hpp"

namespace autotrain {

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The real process environment (getenv).
EnvLookup process_environment();
// A fake environment for tests and tools; the map is copied.
EnvLookup environment_from(std::map<std::string, std::string> variables);

// One number a launcher claims, with the variable it came from (for error messages).
struct ClaimedValue {
  int value = 0;
  std::string variable;  // e.g. "SLURM_PROCID"
};

// Everything one launcher claims; a field is empty when that launcher does not set it.
struct LauncherClaim {
  std::string source;  // "Open MPI", "Slurm", "MPICH (Hydra)", "PMIx", "MVAPICH", "torchrun"
  std::optional<ClaimedValue> rank = std::nullopt;
  std::optional<ClaimedValue> world_size = std::nullopt;
  std::optional<ClaimedValue> local_rank = std::nullopt;
  std::optional<ClaimedValue> local_world_size = std::nullopt;
  std::optional<ClaimedValue> node_rank = std::nullopt;
  std::optional<ClaimedValue> num_nodes = std::nullopt;
};

// Every launcher whose variables are present and believable, in a fixed order (Open MPI,
// Slurm, MPICH, PMIx, MVAPICH, torchrun). Throws Error naming the variable and its value when
// a number is not a non-negative integer, or a count is not positive.
std::vector<LauncherClaim> read_launcher_claims(const EnvLookup& env);

// A human name for what started the process: "mpirun (Open MPI)", "srun (Slurm, PMIx)",
// "mpiexec (MPICH Hydra)", "mpirun (MVAPICH)", "torchrun", or "singleton" when no launcher
// variables are present. Adds " in Slurm job <id>" for an mpirun inside a Slurm allocation.
std::string describe_launcher(const EnvLookup& env);

// Compares every claim with the MPI-derived topology. Throws Error on the first disagreement,
// naming both sources and both values, e.g. "SLURM_PROCID=3 but MPI rank is 1".
void check_launcher_claims(const std::vector<LauncherClaim>& claims, const Topology& topology);

// Parses Slurm's compressed task counts, "2(x3),1" -> {2, 2, 2, 1}. `variable` names the
// variable in the error thrown on malformed text.
std::vector<int> parse_slurm_tasks_per_node(std::string_view text, std::string_view variable);

}  // namespace autotrain
