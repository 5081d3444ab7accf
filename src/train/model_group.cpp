#include "autotrain/train/model_group.hpp"

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/launch/discover.hpp"

namespace autotrain::train {
namespace {

// "1, 2 or 4 ranks" style: the allocation sizes near `world` that split into `models` groups.
std::string sizes_that_work(int models, int world) {
  std::vector<std::string> sizes;
  for (int k = 1; sizes.size() < 4; ++k) {
    if (models * k != world) sizes.push_back(cat(models * k));
  }
  return join(sizes, ", ");
}

}  // namespace

ModelGroup::ModelGroup(const config::TrainCommandLine& command_line, MPI_Comm world)
    : command_line_(command_line) {
  std::string failure;
  try {
    plan_ = config::plan_models(command_line.inputs());
    // The first agreement of the run already waits at most comm_timeout.
    set_collective_timeout(static_cast<double>(plan_.base.comm_timeout));
  } catch (const Error& error) {
    failure = error.what();
  }
  stop_here_if_asked("models");
  agree_or_throw(failure.empty(), failure, world, "the models of the allocation");
  if (!plan_.grouped) return;
  const int world_size = comm_size(world);
  const int models = count();
  if (world_size % models != 0) {
    throw CollectiveError(cat(plan_.source, " trains ", models, " models, but the job has ",
                              world_size, " rank(s), which do not split into ", models,
                              " equal groups; run on a multiple of ", models, " ranks (",
                              sizes_that_work(models, world_size), ", ...)"));
  }
  ranks_per_model_ = world_size / models;
  const int rank = comm_rank(world);
  index_ = rank / ranks_per_model_;
  {
    const CollectiveDeadline deadline("topology discovery of the job");
    DiscoverOptions discover;
    discover.master_port = static_cast<int>(plan_.base.master_port);
    discover.want_gpu = plan_.base.comm_backend == "nccl" || plan_.base.device == "cuda";
    job_ = discover_topology(world, discover);
  }
  {
    const CollectiveDeadline deadline("splitting the job into model groups (MPI_Comm_split)");
    group_comm_ = OwnedComm::split(world, index_, rank);
  }
  MPI_Comm_set_errhandler(group_comm_.get(), MPI_ERRORS_RETURN);
  const int group_rank = comm_rank(group_comm_.get());
  log::set_model(index_, group_rank == 0);
  command_line_.model_changes = plan_.models[static_cast<size_t>(index_)].changes;
}

RunRanks ModelGroup::run_ranks() const {
  if (!grouped()) return {};
  return {comm(), index_, &*job_};
}

}  // namespace autotrain::train
