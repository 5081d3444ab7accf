// `autotrain train`: resolve and check the plan on every rank, print it (--dry-run stops there),
// then train.
#include <iostream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/train/metrics.hpp"
#include "autotrain/train/run_setup.hpp"
#include "autotrain/train/trainer.hpp"

namespace autotrain::cli {

int run_train(const std::vector<std::string>& args, MpiSession& mpi) {
  config::TrainCommandLine command_line;
  try {
    command_line = config::parse_train_command_line(args);
  } catch (const Error& error) {
    throw CollectiveError(cat(error.what(), "\nrun 'autotrain train --help' for every option"));
  }
  if (command_line.help) {
    if (mpi.rank() == 0) std::cout << config::train_help_text();
    return 0;
  }
  const train::RunSetup setup = train::setup_run(command_line, MPI_COMM_WORLD);
  if (command_line.dry_run) {
    if (mpi.rank() == 0) std::cout << train::render_plan(setup) << std::flush;
    return 0;
  }
  log::info("autotrain: training ", setup.params().project_name, " on ", setup.topology.world_size,
            " rank(s), ZeRO stage ", setup.zero_stage, ", communicator ",
            comm_backend_name(setup.comm_backend));
  const train::TrainSummary summary = train::run_training(setup);
  std::string val;
  if (summary.final_val_loss) val = cat(", final validation loss ", *summary.final_val_loss);
  log::info("done: ", summary.steps, " steps in ", train::format_duration(summary.wall_s), ", ",
            static_cast<long long>(summary.tokens), " tokens (",
            static_cast<long long>(summary.tokens_per_s), " tokens/s), final loss ",
            summary.final_loss, val, "; model exported to ", summary.export_dir.string());
  return 0;
}

}  // namespace autotrain::cli
