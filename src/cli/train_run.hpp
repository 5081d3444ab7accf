#pragma once
// The pieces `autotrain train` shares between one model (train.cpp) and several models in one
// allocation (train_models.cpp).
#include <optional>

#include "autotrain/config/command_line.hpp"
#include "autotrain/train/model_group.hpp"
#include "autotrain/train/trainer.hpp"

namespace autotrain::cli {

// Sets up the run over `ranks` and trains it; with --dry-run it checks the run instead and its
// rank 0 prints the plan when `print_plan` (then nullopt). Collective over ranks.comm.
std::optional<train::TrainSummary> set_up_and_train(const config::TrainCommandLine& command_line,
                                                    const train::RunRanks& ranks, bool print_plan);

// The summary a batch user reads at the bottom of the job's output file.
void log_summary(const train::RunSetup& setup, const train::TrainSummary& summary);

// Several models: every group trains its own; rank 0 of the job writes sweep.json and ranks
// them. Returns the job's exit status (the same on every rank).
int train_models(const train::ModelGroup& group, bool dry_run);

}  // namespace autotrain::cli
