// `autotrain train`: resolve and check the plan on every rank, print it (--dry-run stops there),
// then train.
#include <iostream>

#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/cli/commands.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/peer_probe.hpp"
#include "autotrain/train/dry_run.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/metrics.hpp"
#include "autotrain/train/run_setup.hpp"
#include "autotrain/train/signals.hpp"
#include "autotrain/train/trainer.hpp"
#include "train_run.hpp"

namespace autotrain::cli {

void log_summary(const train::RunSetup& setup, const train::TrainSummary& summary) {
  const std::filesystem::path& project = setup.project_dir;
  std::string checkpoint = "none";
  try {
    if (auto latest = ckpt::CheckpointDir(project / "checkpoints").latest())
      checkpoint = latest->string();
  } catch (const std::exception& error) {
    checkpoint = cat("unknown (", error.what(), ")");
  }
  log::info("summary: wall time ", train::format_duration(summary.wall_s), " | steps ",
            summary.steps, " (", summary.steps_this_run, " this run) | tokens ",
            static_cast<long long>(summary.tokens), " | tokens/s ",
            static_cast<long long>(summary.tokens_per_s));
  // A finished project run again trains no step: its losses are those of metrics.jsonl.
  const std::string no_step = "n/a (no step this run; see metrics.jsonl)";
  log::info("summary: final train loss ",
            summary.steps_this_run > 0 ? cat(summary.final_loss) : no_step,
            " | final validation loss ",
            summary.final_val_loss ? cat(*summary.final_val_loss) : std::string("n/a"));
  log::info("summary: checkpoint ", checkpoint);
  log::info("summary: model ",
            summary.export_dir.empty()
                ? std::string("not exported")
                : train::describe_export(summary.export_dir, setup.params().peft,
                                         setup.params().merge_adapter),
            " | status: autotrain status ", project.string(), " | curves: autotrain plot ",
            project.string());
}

std::optional<train::TrainSummary> set_up_and_train(const config::TrainCommandLine& command_line,
                                                    const train::RunRanks& ranks, bool print_plan) {
  const train::RunSetup setup = train::setup_run(command_line, ranks);
  if (command_line.dry_run) {
    const std::string checks = train::check_run(setup);
    if (print_plan && setup.topology.rank == 0) {
      std::cout << train::render_plan(setup, checks) << std::flush;
    }
    // The plan is shown, but the run it plans would fail: so does the dry run.
    const config::BaseModel& base = setup.resolved.base_model;
    if (base.weights_missing()) throw CollectiveError(cat("--dry-run: ", base.missing_message()));
    return std::nullopt;
  }
  log::info("autotrain: training ", setup.project_dir.string(), " on ", setup.topology.world_size,
            " rank(s), ZeRO stage ", setup.zero_stage, ", communicator ",
            comm_backend_name(setup.comm_backend));
  // What the config holds that changes nothing here, said in the run's log as in --dry-run.
  for (const auto& note : setup.resolved.notes) log::info("autotrain: note: ", note);
  // A collective timeout from here on names the ranks that stopped answering.
  const PeerProbe probe(setup.comm);
  const train::TrainSummary summary = train::run_training(setup);
  log_summary(setup, summary);
  return summary;
}

int run_train(const std::vector<std::string>& args, MpiSession& mpi) {
  config::TrainCommandLine command_line;
  try {
    command_line = config::parse_train_command_line(args);
  } catch (const Error& error) {
    throw UsageError(cat(error.what(), "\nrun 'autotrain train --help' for every option"));
  }
  if (command_line.help) {
    if (mpi.rank() == 0) std::cout << config::train_help_text();
    return 0;
  }
  // Installed before set-up so that a stop signal during data preparation, training or the
  // final export never kills a rank with the default action: the trainer stops at the next step
  // boundary (after the first step if the signal came during set-up); after the last step the
  // run simply completes.
  const train::StopSignals stop_signals;
  // First, as it reads comm_timeout for every collective after it.
  const train::ModelGroup group(command_line, MPI_COMM_WORLD);
  // A rank told --dry-run would stop while the others train on, waiting for it.
  if (!same_on_all_ranks(command_line.dry_run ? 1 : 0, MPI_COMM_WORLD, "--dry-run")) {
    throw CollectiveError(
        "--dry-run was given to some ranks and not to others: give every rank the same command "
        "line");
  }
  if (group.grouped()) return train_models(group, command_line.dry_run);
  const auto summary = set_up_and_train(command_line, {}, true);
  if (!summary) return 0;
  if (summary->preempted) return train::kExitPreempted;
  if (const int late = train::StopSignals::received(); late != 0 && mpi.rank() == 0)
    log::info("autotrain: ", train::signal_name(late),
              " arrived after the last step; the run completed normally");
  return 0;
}

}  // namespace autotrain::cli
