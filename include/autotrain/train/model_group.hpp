#pragma once
// Several models in one allocation (num_models, the YAML's sweep block; config/sweep.hpp): the
// job's ranks split into K equal groups of consecutive ranks, group k training model k into
// <project_name>/model-<k>/ with its own communicators. No collective crosses groups while they
// train; the job's ranks meet again only when every model is done.
#include <mpi.h>

#include <optional>

#include "autotrain/config/command_line.hpp"
#include "autotrain/config/sweep.hpp"
#include "autotrain/core/owned_comm.hpp"
#include "autotrain/launch/topology.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

class ModelGroup {
 public:
  // Collective over `world`: plans the models on every rank (a bad sweep is a CollectiveError),
  // refuses a world size that is not a multiple of their number (naming the sizes that work),
  // and, with more than one model, discovers the job's topology and splits the world.
  ModelGroup(const config::TrainCommandLine& command_line, MPI_Comm world);
  ModelGroup(const ModelGroup&) = delete;
  ModelGroup& operator=(const ModelGroup&) = delete;

  bool grouped() const { return plan_.grouped; }
  int index() const { return index_; }  // this rank's model
  int count() const { return static_cast<int>(plan_.models.size()); }
  int ranks_per_model() const { return ranks_per_model_; }
  const config::ModelsPlan& plan() const { return plan_; }
  // This rank's group (the world itself when not grouped), and what setup_run needs of it.
  MPI_Comm comm() const { return grouped() ? group_comm_.get() : MPI_COMM_WORLD; }
  RunRanks run_ranks() const;
  // The command line of this rank's model: the given one plus the model's changes.
  config::TrainCommandLine command_line() const { return command_line_; }

 private:
  config::ModelsPlan plan_;
  config::TrainCommandLine command_line_;
  int index_ = 0;
  int ranks_per_model_ = 1;
  OwnedComm group_comm_;  // with more than one model
  std::optional<Topology> job_;
};

}  // namespace autotrain::train
