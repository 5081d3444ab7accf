// plan_launch: the command `autotrain launch` runs for each situation (CPU, one GPU, several
// GPUs, several nodes; inside a Slurm allocation or not) and the errors for requests that
// cannot be met.
#include "autotrain/cli/launch_plan.hpp"

#include <gtest/gtest.h>

#include "../config/expect_error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::cli::launch_plan_test {
namespace {

using testing::contains;
using testing::error_message;

LaunchRequest train_request() {
  LaunchRequest request;
  request.command_args = {"train", "--config", "run.yaml"};
  return request;
}

LaunchSituation laptop(int gpus = 0) {
  LaunchSituation situation;
  situation.visible_gpus = gpus;
  situation.cpu_cores = 8;
  situation.autotrain_path = "/opt/bin/autotrain";
  return situation;
}

LaunchSituation allocation(int nodes, int tasks, int gpus) {
  LaunchSituation situation = laptop(gpus);
  situation.slurm_job_id = "4242";
  situation.slurm_nodes = nodes;
  situation.slurm_tasks = tasks;
  return situation;
}

std::string command(const LaunchPlan& plan) {
  return join(plan.argv, " ");
}

TEST(LaunchPlan, CpuOutsideAllocationRunsOneRankWithEveryCoreUnderMpirun) {
  const LaunchPlan plan = plan_launch(train_request(), laptop());
  EXPECT_EQ(plan.kind, LaunchKind::cpu);
  EXPECT_EQ(plan.world_size, 1);
  EXPECT_EQ(plan.threads_per_rank, 8);
  EXPECT_EQ(command(plan),
            "mpirun -np 1 --bind-to none /opt/bin/autotrain train --config run.yaml");
}

TEST(LaunchPlan, NumProcessesSplitsTheCoresAmongCpuRanks) {
  LaunchRequest request = train_request();
  request.num_processes = 4;
  const LaunchPlan plan = plan_launch(request, laptop());
  EXPECT_EQ(plan.world_size, 4);
  EXPECT_EQ(plan.threads_per_rank, 2);
  EXPECT_TRUE(contains(command(plan), "mpirun -np 4 --bind-to none"));
}

TEST(LaunchPlan, MoreCpuRanksThanCoresOversubscribes) {
  LaunchRequest request = train_request();
  request.num_processes = 16;
  EXPECT_TRUE(contains(command(plan_launch(request, laptop())), "--oversubscribe"));
}

TEST(LaunchPlan, RootGetsAllowRunAsRoot) {
  LaunchSituation situation = laptop();
  situation.is_root = true;
  EXPECT_TRUE(contains(command(plan_launch(train_request(), situation)), "--allow-run-as-root"));
}

TEST(LaunchPlan, UsesEveryVisibleGpuByDefault) {
  const LaunchPlan plan = plan_launch(train_request(), laptop(4));
  EXPECT_EQ(plan.kind, LaunchKind::multi_gpu);
  EXPECT_EQ(plan.world_size, 4);
  EXPECT_EQ(command(plan), "mpirun -np 4 /opt/bin/autotrain train --config run.yaml");
}

TEST(LaunchPlan, OneGpuIsTheSingleGpuCase) {
  LaunchRequest request = train_request();
  request.num_gpus = 1;
  const LaunchPlan plan = plan_launch(request, laptop(4));
  EXPECT_EQ(plan.kind, LaunchKind::single_gpu);
  EXPECT_EQ(plan.world_size, 1);
}

TEST(LaunchPlan, ZeroGpusOnAGpuMachineTellsTrainToUseTheCpu) {
  LaunchRequest request = train_request();
  request.num_gpus = 0;
  const LaunchPlan plan = plan_launch(request, laptop(2));
  EXPECT_EQ(plan.kind, LaunchKind::cpu);
  EXPECT_TRUE(contains(command(plan), "train --config run.yaml --device cpu"));
}

TEST(LaunchPlan, RejectsMoreGpusThanVisibleSayingHowMany) {
  LaunchRequest request = train_request();
  request.num_gpus = 8;
  LaunchSituation situation = laptop(2);
  situation.cuda_visible_devices = "0,1";
  const std::string message = error_message([&] { plan_launch(request, situation); });
  EXPECT_TRUE(contains(message, "--num-gpus 8 but only 2 GPU(s) visible"));
  EXPECT_TRUE(contains(message, "CUDA_VISIBLE_DEVICES=0,1"));
  EXPECT_TRUE(contains(message, "at most 2"));
}

TEST(LaunchPlan, RejectsSeveralNodesOutsideAnAllocationPointingToSallocAndSbatch) {
  LaunchRequest request = train_request();
  request.num_nodes = 2;
  const std::string message = error_message([&] { plan_launch(request, laptop()); });
  EXPECT_TRUE(contains(message, "needs a Slurm allocation"));
  EXPECT_TRUE(contains(message, "salloc -N 2"));
  EXPECT_TRUE(contains(message, "--sbatch FILE"));
}

TEST(LaunchPlan, InsideAllocationUsesSrunOverItsNodesAndTasks) {
  const LaunchPlan plan = plan_launch(train_request(), allocation(1, 2, 0));
  EXPECT_TRUE(plan.in_allocation);
  EXPECT_EQ(plan.world_size, 2);
  EXPECT_EQ(plan.threads_per_rank, 4);
  EXPECT_EQ(command(plan),
            "srun --mpi=pmix --nodes=1 --ntasks-per-node=2 /opt/bin/autotrain train --config "
            "run.yaml");
}

TEST(LaunchPlan, SeveralNodesWithGpusIsOneRankPerGpuOnEveryNode) {
  LaunchSituation situation = allocation(4, 16, 4);
  situation.slurm_cpus_per_task = 12;
  const LaunchPlan plan = plan_launch(train_request(), situation);
  EXPECT_EQ(plan.kind, LaunchKind::multi_node);
  EXPECT_EQ(plan.world_size, 16);
  EXPECT_EQ(plan.threads_per_rank, 12);
  // Slurm 22.05's srun does not inherit the job's --cpus-per-task.
  EXPECT_TRUE(contains(command(plan), "--nodes=4 --ntasks-per-node=4 --cpus-per-task=12"));
}

TEST(LaunchPlan, RejectsMoreNodesThanTheAllocationHas) {
  LaunchRequest request = train_request();
  request.num_nodes = 3;
  const std::string message = error_message([&] { plan_launch(request, allocation(2, 2, 0)); });
  EXPECT_TRUE(contains(message, "Slurm job 4242 has 2 node(s)"));
}

TEST(LaunchPlan, RefusesToNestInsideAnSrunStep) {
  LaunchSituation situation = allocation(1, 2, 0);
  situation.in_slurm_step = true;
  EXPECT_TRUE(
      contains(error_message([&] { plan_launch(train_request(), situation); }), "not under srun"));
}

TEST(LaunchPlan, PassesTheDistributedBackendToTrain) {
  LaunchRequest request = train_request();
  request.distributed_backend = "deepspeed";
  EXPECT_TRUE(contains(command(plan_launch(request, laptop())),
                       "train --config run.yaml --distributed-backend deepspeed"));
}

TEST(LaunchPlan, RejectsAnUnknownDistributedBackendNamingTheChoices) {
  LaunchRequest request = train_request();
  request.distributed_backend = "fsdp";
  EXPECT_TRUE(contains(error_message([&] { plan_launch(request, laptop()); }),
                       "'fsdp' is not supported; expected ddp or deepspeed"));
}

TEST(LaunchPlan, RejectsTheBackendGivenBothToLaunchAndToTrain) {
  LaunchRequest request = train_request();
  request.distributed_backend = "ddp";
  request.command_args.push_back("--distributed_backend=ddp");
  EXPECT_TRUE(contains(error_message([&] { plan_launch(request, laptop()); }), "given twice"));
}

TEST(LaunchPlan, RejectsAnEmptyCommandWithAnExample) {
  LaunchRequest request;
  EXPECT_TRUE(contains(error_message([&] { plan_launch(request, laptop()); }),
                       "autotrain launch --num-gpus 2 -- train --config"));
}

TEST(LaunchPlan, SbatchScriptAsksForTheNodesGpusAndCoresOfThePlan) {
  LaunchRequest request = train_request();
  request.write_sbatch = true;
  request.num_nodes = 2;
  request.num_gpus = 4;  // more than this (login) node has: fine for a script
  request.cpus_per_task = 16;
  const LaunchPlan plan = plan_launch(request, laptop(0));
  const std::string script = render_sbatch(plan, request);
  EXPECT_TRUE(contains(script, "#!/bin/bash\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --nodes=2\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --ntasks-per-node=4\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --gpus-per-node=4\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --cpus-per-task=16\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --output=autotrain-%j.out\n"));
  EXPECT_TRUE(contains(script,
                       "srun --mpi=pmix --nodes=2 --ntasks-per-node=4 "
                       "\"--cpus-per-task=${SLURM_CPUS_PER_TASK}\" /opt/bin/autotrain train"));
}

TEST(LaunchPlan, SbatchScriptWithoutCpusPerTaskDividesTheComputeNodesCores) {
  // The login node writing the script has 8 cores; the compute nodes' count is not known here.
  LaunchRequest request = train_request();
  request.write_sbatch = true;
  request.num_processes = 4;
  const LaunchPlan plan = plan_launch(request, laptop(0));
  const std::string script = render_sbatch(plan, request);
  EXPECT_FALSE(contains(script, "#SBATCH --cpus-per-task=")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --exclusive\n")) << script;
  EXPECT_TRUE(
      contains(script, "cpus_per_rank=$(( SLURM_CPUS_ON_NODE / SLURM_NTASKS_PER_NODE ))\n"));
  EXPECT_TRUE(contains(script, "export OMP_NUM_THREADS=$cpus_per_rank\n"));
  EXPECT_TRUE(contains(script, "\"--cpus-per-task=${cpus_per_rank}\""));
  // A CPU plan names a CPU partition, and every script survives its time limit.
  EXPECT_TRUE(contains(script, "##SBATCH --partition=cpu\n")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --signal=B:USR1@300\n#SBATCH --requeue\n"));
  EXPECT_TRUE(contains(script, "trap 'kill -USR1 \"$srun_pid\" 2>/dev/null' USR1 TERM\n"));
  EXPECT_TRUE(contains(script, "if [ \"$status\" -eq 3 ]; then"));
  EXPECT_TRUE(contains(script, "scontrol requeue \"$SLURM_JOB_ID\""));
}

TEST(ShellJoin, QuotesOnlyWordsThatNeedIt) {
  EXPECT_EQ(shell_join({"train", "--config", "a b.yaml", "it's", "--lr=3e-4"}),
            "train --config 'a b.yaml' 'it'\\''s' --lr=3e-4");
}

}  // namespace
}  // namespace autotrain::cli::launch_plan_test
