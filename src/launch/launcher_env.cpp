#include "autotrain/launch/launcher_env.hpp"

#include <charconv>
#include <cstdlib>
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain {
namespace {

// Slurm's step ids at and above this are its special steps (batch script, extern, interactive
// and pending steps: 0xfffffffa and up in Slurm 22.05); the ranks of an srun have a small id.
constexpr unsigned long long kFirstSpecialSlurmStep = 0xfffffff0ULL;

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

// Reads `name` as a number; nullopt when unset. A count must be >= 1, an index >= 0.
enum class Kind { index, count };

std::optional<ClaimedValue> read_number(const EnvLookup& env, const std::string& name, Kind kind) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  const std::optional<int> value = parse_int(*text);
  const int minimum = kind == Kind::count ? 1 : 0;
  if (!value || *value < minimum) {
    throw Error(cat("environment variable ", name, "='", *text, "' is not ",
                    kind == Kind::count ? "a positive integer" : "a non-negative integer",
                    " (it is set by the launcher; unset it or fix the launch command)"));
  }
  return ClaimedValue{*value, name};
}

// The first of `names` that is set.
std::optional<ClaimedValue> read_first(const EnvLookup& env,
                                       std::initializer_list<const char*> names, Kind kind) {
  for (const char* name : names) {
    if (auto value = read_number(env, name, kind)) return value;
  }
  return std::nullopt;
}

bool is_set(const EnvLookup& env, const std::string& name) {
  return env(name).has_value();
}

// Variables only an mpirun-style launcher sets for its ranks. When one is present, SLURM_*
// variables (if any) were inherited from the allocation or from the launcher's daemons.
bool started_by_mpi_launcher(const EnvLookup& env) {
  return is_set(env, "OMPI_COMM_WORLD_RANK") || is_set(env, "MV2_COMM_WORLD_RANK") ||
         is_set(env, "MPI_LOCALRANKID");
}

bool inside_slurm_step(const EnvLookup& env) {
  const std::optional<std::string> step = env("SLURM_STEP_ID");
  if (!step || !env("SLURM_PROCID")) return false;
  char* end = nullptr;
  const unsigned long long id = std::strtoull(step->c_str(), &end, 10);
  if (step->empty() || *end != '\0') {
    throw Error(cat("environment variable SLURM_STEP_ID='", *step,
                    "' is not a Slurm step number (it is set by srun)"));
  }
  return id < kFirstSpecialSlurmStep;
}

bool slurm_claims_apply(const EnvLookup& env) {
  return inside_slurm_step(env) && !started_by_mpi_launcher(env);
}

LauncherClaim read_slurm(const EnvLookup& env) {
  LauncherClaim claim{.source = "Slurm"};
  claim.rank = read_number(env, "SLURM_PROCID", Kind::index);
  claim.world_size = read_first(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, Kind::count);
  claim.local_rank = read_number(env, "SLURM_LOCALID", Kind::index);
  claim.node_rank = read_number(env, "SLURM_NODEID", Kind::index);
  claim.num_nodes = read_first(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}, Kind::count);
  // The node rank is the position of this node in the step; with -m arbitrary the nodes are not
  // ordered by their lowest rank (our NODE_RANK's definition), so it cannot be compared.
  const std::optional<std::string> distribution = env("SLURM_DISTRIBUTION");
  if (distribution && distribution->starts_with("arbitrary")) claim.node_rank.reset();

  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    const std::optional<std::string> text = env(name);
    if (!text) continue;
    const std::vector<int> per_node = parse_slurm_tasks_per_node(*text, name);
    if (claim.node_rank && claim.node_rank->value < static_cast<int>(per_node.size())) {
      claim.local_world_size =
          ClaimedValue{per_node[static_cast<size_t>(claim.node_rank->value)],
                       cat(name, "[SLURM_NODEID=", claim.node_rank->value, "]")};
    }
    break;
  }
  return claim;
}

bool has_any_value(const LauncherClaim& claim) {
  return claim.rank || claim.world_size || claim.local_rank || claim.local_world_size ||
         claim.node_rank || claim.num_nodes;
}

void compare(const LauncherClaim& claim, const std::optional<ClaimedValue>& claimed, int actual,
             std::string_view what) {
  if (!claimed || claimed->value == actual) return;
  const std::string hint =
      claim.source == "torchrun"
          ? "autotrain takes its ranks from MPI: start it with mpirun or srun (not torchrun), "
            "or unset the stale RANK/WORLD_SIZE/LOCAL_RANK variables"
          : "a stale variable in the environment, or a launcher whose MPI plugin does not match "
            "this MPI library (e.g. srun needs --mpi=pmix for Open MPI)";
  throw Error(cat(claimed->variable, "=", claimed->value, " (", claim.source, ") but MPI ", what,
                  " is ", actual, ": ", hint, "; see docs/launching.md"));
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup environment_from(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::vector<int> parse_slurm_tasks_per_node(std::string_view text, std::string_view variable) {
  // Grammar: item (',' item)*, item = count | count '(x' repeat ')'.
  std::vector<int> counts;
  const auto malformed = [&] {
    return Error(cat("environment variable ", variable, "='", text,
                     "' is not a Slurm task count list like '2(x3),1'"));
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    const size_t paren = item.find('(');
    const std::optional<int> count = parse_int(item.substr(0, paren));
    if (!count || *count < 1) throw malformed();
    int repeat = 1;
    if (paren != std::string_view::npos) {
      if (!item.ends_with(')') || item.substr(paren, 2) != "(x") throw malformed();
      const std::optional<int> times = parse_int(item.substr(paren + 2, item.size() - paren - 3));
      if (!times || *times < 1) throw malformed();
      repeat = *times;
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), *count);
    start = comma + 1;
  }
  return counts;
}

std::vector<LauncherClaim> read_launcher_claims(const EnvLookup& env) {
  std::vector<LauncherClaim> claims;
  const auto keep = [&](LauncherClaim claim) {
    if (has_any_value(claim)) claims.push_back(std::move(claim));
  };

  keep({.source = "Open MPI",
        .rank = read_number(env, "OMPI_COMM_WORLD_RANK", Kind::index),
        .world_size = read_number(env, "OMPI_COMM_WORLD_SIZE", Kind::count),
        .local_rank = read_number(env, "OMPI_COMM_WORLD_LOCAL_RANK", Kind::index),
        .local_world_size = read_number(env, "OMPI_COMM_WORLD_LOCAL_SIZE", Kind::count)});
  // OMPI_COMM_WORLD_NODE_RANK is not a node index (it counts processes on the node across
  // spawned jobs), so it is deliberately not read.
  if (slurm_claims_apply(env)) keep(read_slurm(env));
  keep({.source = "MPICH (Hydra)",
        .rank = read_number(env, "PMI_RANK", Kind::index),
        .world_size = read_number(env, "PMI_SIZE", Kind::count),
        .local_rank = read_number(env, "MPI_LOCALRANKID", Kind::index),
        .local_world_size = read_number(env, "MPI_LOCALNRANKS", Kind::count)});
  keep({.source = "PMIx", .rank = read_number(env, "PMIX_RANK", Kind::index)});
  keep({.source = "MVAPICH",
        .rank = read_number(env, "MV2_COMM_WORLD_RANK", Kind::index),
        .world_size = read_number(env, "MV2_COMM_WORLD_SIZE", Kind::count),
        .local_rank = read_number(env, "MV2_COMM_WORLD_LOCAL_RANK", Kind::index),
        .local_world_size = read_number(env, "MV2_COMM_WORLD_LOCAL_SIZE", Kind::count)});
  keep({.source = "torchrun",
        .rank = read_number(env, "RANK", Kind::index),
        .world_size = read_number(env, "WORLD_SIZE", Kind::count),
        .local_rank = read_number(env, "LOCAL_RANK", Kind::index),
        .local_world_size = read_number(env, "LOCAL_WORLD_SIZE", Kind::count),
        .node_rank = read_first(env, {"GROUP_RANK", "NODE_RANK"}, Kind::index),
        .num_nodes = read_number(env, "GROUP_WORLD_SIZE", Kind::count)});
  return claims;
}

std::string describe_launcher(const EnvLookup& env) {
  // Open MPI started without a launcher spawns its own PMIx server and says so.
  if (env("OMPI_MCA_ess") == "singleton") return "singleton";
  std::string name;
  if (is_set(env, "OMPI_COMM_WORLD_RANK")) {
    name = "mpirun (Open MPI)";
  } else if (is_set(env, "MV2_COMM_WORLD_RANK")) {
    name = "mpirun (MVAPICH)";
  } else if (is_set(env, "MPI_LOCALRANKID")) {
    name = "mpiexec (MPICH Hydra)";
  } else if (slurm_claims_apply(env)) {
    if (is_set(env, "PMIX_RANK")) return "srun (Slurm, PMIx)";
    if (is_set(env, "PMI_FD") || is_set(env, "PMI_RANK")) return "srun (Slurm, PMI2)";
    return "srun (Slurm)";
  } else if (is_set(env, "TORCHELASTIC_RUN_ID") || is_set(env, "GROUP_RANK")) {
    return "torchrun";
  } else if (is_set(env, "PMIX_RANK") || is_set(env, "PMI_RANK")) {
    return "PMI launcher";
  } else if (is_set(env, "RANK") || is_set(env, "WORLD_SIZE")) {
    return "RANK/WORLD_SIZE already set";
  } else {
    return "singleton";
  }
  if (const auto job = env("SLURM_JOB_ID")) name += cat(" in Slurm job ", *job);
  return name;
}

void check_launcher_claims(const std::vector<LauncherClaim>& claims, const Topology& topology) {
  for (const LauncherClaim& claim : claims) {
    compare(claim, claim.rank, topology.rank, "rank");
    compare(claim, claim.world_size, topology.world_size, "world size");
    compare(claim, claim.local_rank, topology.local_rank, "local rank");
    compare(claim, claim.local_world_size, topology.local_world_size, "local world size");
    compare(claim, claim.node_rank, topology.node_rank, "node rank");
    compare(claim, claim.num_nodes, topology.num_nodes, "node count");
  }
}

}  // namespace autotrain
