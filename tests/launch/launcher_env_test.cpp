// The launcher-variable mapping, with fake environments of every launcher we support.
#include "autotrain/launch/launcher_env.hpp"

#include <gtest/gtest.h>

#include "autotrain/core/error.hpp"

namespace autotrain::launcher_env_test {
namespace {

using Vars = std::map<std::string, std::string>;

Topology topology(int rank, int world_size, int local_rank, int local_world_size, int node_rank,
                  int num_nodes) {
  Topology t;
  t.rank = rank;
  t.world_size = world_size;
  t.local_rank = local_rank;
  t.local_world_size = local_world_size;
  t.node_rank = node_rank;
  t.num_nodes = num_nodes;
  return t;
}

// The error message of check_launcher_claims for `vars` against `actual`, "" when it passes.
std::string mismatch(const Vars& vars, const Topology& actual) {
  try {
    check_launcher_claims(read_launcher_claims(environment_from(vars)), actual);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

std::string read_error(const Vars& vars) {
  try {
    read_launcher_claims(environment_from(vars));
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// srun -N 2 -n 6 --ntasks-per-node 3 --mpi=pmix, the task with global rank 4.
const Vars kSlurmTwoNodesRank4 = {{"SLURM_JOB_ID", "77"},
                                  {"SLURM_STEP_ID", "0"},
                                  {"SLURM_PROCID", "4"},
                                  {"SLURM_NTASKS", "6"},
                                  {"SLURM_LOCALID", "1"},
                                  {"SLURM_NODEID", "1"},
                                  {"SLURM_NNODES", "2"},
                                  {"SLURM_STEP_NUM_TASKS", "6"},
                                  {"SLURM_STEP_NUM_NODES", "2"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"},
                                  {"SLURM_TASKS_PER_NODE", "3(x2)"},
                                  {"PMIX_RANK", "4"}};

TEST(LauncherEnv, SingletonWithoutLauncherVariablesClaimsNothing) {
  EXPECT_TRUE(read_launcher_claims(environment_from({})).empty());
  EXPECT_EQ(describe_launcher(environment_from({})), "singleton");
}

TEST(LauncherEnv, OpenMpiSingletonIsNamedSingleton) {
  // What MPI_Init sets in a process started without mpirun.
  const Vars vars = {{"OMPI_MCA_ess", "singleton"}, {"PMIX_RANK", "0"}};
  EXPECT_EQ(describe_launcher(environment_from(vars)), "singleton");
  EXPECT_EQ(mismatch(vars, topology(0, 1, 0, 1, 0, 1)), "");
}

TEST(LauncherEnv, ReadsEveryOpenMpiVariable) {
  const Vars vars = {{"OMPI_COMM_WORLD_RANK", "3"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                     {"OMPI_COMM_WORLD_NODE_RANK", "1"}};
  const auto claims = read_launcher_claims(environment_from(vars));
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].source, "Open MPI");
  EXPECT_EQ(claims[0].rank->value, 3);
  EXPECT_EQ(claims[0].world_size->value, 4);
  EXPECT_EQ(claims[0].local_rank->value, 1);
  EXPECT_EQ(claims[0].local_world_size->value, 2);
  EXPECT_FALSE(claims[0].node_rank.has_value()) << "OMPI_COMM_WORLD_NODE_RANK is not a node index";
  EXPECT_EQ(describe_launcher(environment_from(vars)), "mpirun (Open MPI)");
  EXPECT_EQ(mismatch(vars, topology(3, 4, 1, 2, 1, 2)), "");
}

TEST(LauncherEnv, MultiNodeSlurmStepAgreesWithMatchingTopology) {
  const auto claims = read_launcher_claims(environment_from(kSlurmTwoNodesRank4));
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].source, "Slurm");
  EXPECT_EQ(claims[0].local_world_size->value, 3);
  EXPECT_EQ(claims[1].source, "PMIx");
  EXPECT_EQ(mismatch(kSlurmTwoNodesRank4, topology(4, 6, 1, 3, 1, 2)), "");
  EXPECT_EQ(describe_launcher(environment_from(kSlurmTwoNodesRank4)), "srun (Slurm, PMIx)");
}

TEST(LauncherEnv, SlurmRankConflictNamesBothSourcesAndValues) {
  Vars vars = kSlurmTwoNodesRank4;
  vars.erase("PMIX_RANK");
  EXPECT_EQ(mismatch(vars, topology(1, 6, 1, 3, 1, 2))
                .rfind("SLURM_PROCID=4 (Slurm) but MPI rank is 1", 0),
            0u)
      << mismatch(vars, topology(1, 6, 1, 3, 1, 2));
}

TEST(LauncherEnv, SlurmLocalWorldSizeComesFromThisNodesTaskCount) {
  Vars vars = kSlurmTwoNodesRank4;
  vars["SLURM_STEP_TASKS_PER_NODE"] = "4,2";  // node 1 runs 2 tasks
  const std::string message = mismatch(vars, topology(4, 6, 1, 3, 1, 2));
  EXPECT_NE(message.find("SLURM_STEP_TASKS_PER_NODE[SLURM_NODEID=1]=2 (Slurm) but MPI local world "
                         "size is 3"),
            std::string::npos)
      << message;
}

TEST(LauncherEnv, SlurmNodeRankConflictIsAnError) {
  EXPECT_NE(mismatch(kSlurmTwoNodesRank4, topology(4, 6, 1, 3, 0, 2))
                .find("SLURM_NODEID=1 (Slurm) but MPI node rank is 0"),
            std::string::npos);
}

TEST(LauncherEnv, SlurmNodeCountConflictIsAnError) {
  // e.g. two hosts that MPI sees as one shared-memory node.
  EXPECT_NE(mismatch(kSlurmTwoNodesRank4, topology(4, 6, 1, 3, 1, 3))
                .find("SLURM_STEP_NUM_NODES=2 (Slurm) but MPI node count is 3"),
            std::string::npos);
}

TEST(LauncherEnv, SlurmBatchScriptVariablesAreIgnoredUnderMpirun) {
  // mpirun inside sbatch: every rank inherits SLURM_PROCID=0 and the allocation's task count, or
  // the step of mpirun's own daemons (one per node); neither describes the ranks.
  Vars vars = {{"SLURM_JOB_ID", "12"},        {"SLURM_STEP_ID", "0"},        {"SLURM_PROCID", "0"},
               {"SLURM_NTASKS", "1"},         {"SLURM_LOCALID", "0"},        {"SLURM_NODEID", "0"},
               {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"PMIX_RANK", "2"}};
  const auto claims = read_launcher_claims(environment_from(vars));
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].source, "Open MPI");
  EXPECT_EQ(claims[1].source, "PMIx");
  EXPECT_EQ(mismatch(vars, topology(2, 4, 2, 4, 0, 1)), "");
  EXPECT_EQ(describe_launcher(environment_from(vars)), "mpirun (Open MPI) in Slurm job 12");
}

TEST(LauncherEnv, SlurmVariablesOutsideAStepAreIgnored) {
  // The batch script itself (or salloc's shell): no ordinary step id.
  Vars batch = {{"SLURM_JOB_ID", "12"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}};
  EXPECT_TRUE(read_launcher_claims(environment_from(batch)).empty());
  batch["SLURM_STEP_ID"] = "4294967291";  // Slurm's batch step
  EXPECT_TRUE(read_launcher_claims(environment_from(batch)).empty());
  EXPECT_EQ(describe_launcher(environment_from(batch)), "singleton");
}

TEST(LauncherEnv, SlurmArbitraryDistributionSkipsTheNodeRankCheck) {
  Vars vars = kSlurmTwoNodesRank4;
  vars["SLURM_DISTRIBUTION"] = "arbitrary";
  EXPECT_EQ(mismatch(vars, topology(4, 6, 1, 3, 0, 2)), "");
}

TEST(LauncherEnv, ReadsMpichHydraVariables) {
  const Vars vars = {{"PMI_RANK", "5"},        {"PMI_SIZE", "8"},      {"MPI_LOCALRANKID", "1"},
                     {"MPI_LOCALNRANKS", "4"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}};
  const auto claims = read_launcher_claims(environment_from(vars));
  ASSERT_EQ(claims.size(), 1u) << "Hydra inside Slurm: SLURM_* belong to its proxies";
  EXPECT_EQ(claims[0].source, "MPICH (Hydra)");
  EXPECT_EQ(describe_launcher(environment_from(vars)), "mpiexec (MPICH Hydra)");
  EXPECT_EQ(mismatch(vars, topology(5, 8, 1, 4, 1, 2)), "");
  EXPECT_NE(mismatch(vars, topology(5, 8, 2, 4, 1, 2))
                .find("MPI_LOCALRANKID=1 (MPICH (Hydra)) but MPI "
                      "local rank is 2"),
            std::string::npos);
}

TEST(LauncherEnv, ReadsMvapichVariables) {
  const Vars vars = {{"MV2_COMM_WORLD_RANK", "0"},
                     {"MV2_COMM_WORLD_SIZE", "2"},
                     {"MV2_COMM_WORLD_LOCAL_RANK", "0"},
                     {"MV2_COMM_WORLD_LOCAL_SIZE", "2"}};
  EXPECT_EQ(describe_launcher(environment_from(vars)), "mpirun (MVAPICH)");
  EXPECT_EQ(mismatch(vars, topology(0, 2, 0, 2, 0, 1)), "");
  EXPECT_NE(mismatch(vars, topology(0, 3, 0, 2, 0, 1)).find("MV2_COMM_WORLD_SIZE=2"),
            std::string::npos);
}

TEST(LauncherEnv, TorchrunVariablesAreCheckedAgainstMpi) {
  const Vars vars = {{"RANK", "1"},
                     {"WORLD_SIZE", "4"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "2"},
                     {"GROUP_RANK", "0"},
                     {"GROUP_WORLD_SIZE", "2"},
                     {"TORCHELASTIC_RUN_ID", "none"}};
  EXPECT_EQ(describe_launcher(environment_from(vars)), "torchrun");
  EXPECT_EQ(mismatch(vars, topology(1, 4, 1, 2, 0, 2)), "");
  // torchrun starting autotrain: MPI runs as a singleton.
  const std::string message = mismatch(vars, topology(0, 1, 0, 1, 0, 1));
  EXPECT_NE(message.find("RANK=1 (torchrun) but MPI rank is 0"), std::string::npos) << message;
  EXPECT_NE(message.find("not torchrun"), std::string::npos) << message;
}

TEST(LauncherEnv, PreviouslyExportedNodeRankIsChecked) {
  const Vars vars = {{"RANK", "0"}, {"NODE_RANK", "1"}};
  EXPECT_NE(mismatch(vars, topology(0, 1, 0, 1, 0, 1)).find("NODE_RANK=1"), std::string::npos);
}

TEST(LauncherEnv, MissingValuesAreNotChecked) {
  // Only some variables set: the others are simply not compared.
  const Vars vars = {{"PMIX_RANK", "2"}};
  EXPECT_EQ(mismatch(vars, topology(2, 4, 0, 1, 2, 4)), "");
  EXPECT_NE(mismatch(vars, topology(3, 4, 0, 1, 3, 4)).find("PMIX_RANK=2 (PMIx) but MPI rank is 3"),
            std::string::npos);
}

TEST(LauncherEnv, GarbageNumbersAreErrorsNamingTheVariable) {
  EXPECT_NE(read_error({{"OMPI_COMM_WORLD_RANK", "two"}})
                .find("OMPI_COMM_WORLD_RANK='two' is not a "
                      "non-negative integer"),
            std::string::npos);
  EXPECT_NE(read_error({{"PMI_SIZE", "0"}}).find("PMI_SIZE='0' is not a positive integer"),
            std::string::npos);
  EXPECT_NE(read_error({{"RANK", "-1"}}).find("RANK='-1'"), std::string::npos);
  EXPECT_NE(read_error({{"LOCAL_RANK", "1x"}}).find("LOCAL_RANK='1x'"), std::string::npos);
  EXPECT_NE(read_error({{"WORLD_SIZE", ""}}).find("WORLD_SIZE=''"), std::string::npos);
  EXPECT_NE(
      read_error({{"SLURM_STEP_ID", "zero"}, {"SLURM_PROCID", "0"}}).find("SLURM_STEP_ID='zero'"),
      std::string::npos);
}

TEST(SlurmTasksPerNode, ExpandsRepeatsAndLists) {
  EXPECT_EQ(parse_slurm_tasks_per_node("4", "V"), (std::vector<int>{4}));
  EXPECT_EQ(parse_slurm_tasks_per_node("2(x3),1", "V"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(parse_slurm_tasks_per_node("1,3(x2)", "V"), (std::vector<int>{1, 3, 3}));
}

TEST(SlurmTasksPerNode, RejectsMalformedTextNamingTheVariable) {
  for (const char* text : {"", "x", "2(3)", "2(x)", "2(x3", "2,,1", "0", "2(x0)"}) {
    try {
      parse_slurm_tasks_per_node(text, "SLURM_TASKS_PER_NODE");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(cat("SLURM_TASKS_PER_NODE='", text, "'")),
                std::string::npos);
    }
  }
}

}  // namespace
}  // namespace autotrain::launcher_env_test
