// `autotrain train` with several models in one allocation (num_models, a sweep): each group of
// ranks trains its model; a model that fails a check or diverges (a CollectiveError inside its
// group) stops alone and is marked failed, the others go on. Anything else still aborts the job.
#include <iostream>
#include <sstream>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/train/signals.hpp"
#include "autotrain/train/sweep.hpp"
#include "train_run.hpp"

namespace autotrain::cli {
namespace {

std::string models_table(const train::ModelGroup& group) {
  const auto& plan = group.plan();
  std::ostringstream out;
  out << "autotrain: " << group.count() << " models from " << plan.source << ", "
      << group.ranks_per_model() << " rank(s) each, into " << plan.base.project_name
      << "/model-<k>/\n";
  for (int k = 0; k < group.count(); ++k) {
    out << "  model " << k << "  ranks " << k * group.ranks_per_model() << "-"
        << (k + 1) * group.ranks_per_model() - 1 << "  "
        << config::describe_changes(plan.models[static_cast<size_t>(k)]) << "\n";
  }
  return out.str();
}

// Trains this rank's model unless an earlier run of the job finished it or saw it fail.
train::ModelResult train_own_model(const train::ModelGroup& group,
                                   const std::filesystem::path& dir) {
  const bool talker = comm_rank(group.comm()) == 0;
  const auto earlier = train::read_model_result(dir);
  const bool ended = earlier && (earlier->status == "finished" || earlier->status == "failed");
  if (same_on_all_ranks(ended ? 1 : 0, group.comm(), "the model's earlier result") && ended) {
    log::info("model ", group.index(), ": ", earlier->status, " in an earlier run of this job; ",
              "kept as it is (delete ", (dir / "result.json").string(), " to train it again)");
    return *earlier;
  }
  train::ModelResult result;
  result.model = group.index();
  try {
    const auto summary = set_up_and_train(group.command_line(), group.run_ranks(), false);
    result.status = summary->preempted ? "preempted" : "finished";
    result.steps = summary->steps;
    result.final_loss = summary->final_loss;
    result.final_val_loss = summary->final_val_loss;
    result.tokens_per_s = summary->tokens_per_s;
  } catch (const CollectiveError& error) {
    result.status = "failed";
    result.error = error.what();
    if (talker) {
      log::error("model ", group.index(), " failed: ", error.what(), "; the other models go on");
    }
  }
  if (talker) train::write_model_result(dir, result);
  return result;
}

}  // namespace

int train_models(const train::ModelGroup& group, bool dry_run) {
  const auto& plan = group.plan();
  const std::filesystem::path project = plan.base.project_name;
  const int world_rank_here = world_rank();
  if (world_rank_here == 0) std::cout << models_table(group) << std::flush;
  if (dry_run) {
    // Every model's set-up and checks run; model 0's plan is printed.
    int status = 0;
    try {
      set_up_and_train(group.command_line(), group.run_ranks(), group.index() == 0);
    } catch (const CollectiveError& error) {
      if (comm_rank(group.comm()) == 0) log::error("model ", group.index(), ": ", error.what());
      status = 1;
    }
    AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return status;
  }
  if (world_rank_here == 0) {
    train::write_sweep_json(project, plan, group.ranks_per_model(),
                            train::collect_results(project, group.count()));
  }
  train_own_model(group, train::model_dir(project, group.index()));
  // The models end at their own pace; the job's ranks meet once every model is done.
  AT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  log::set_model(-1, world_rank_here == 0);
  int status = 0;
  if (world_rank_here == 0) {
    const auto results = train::collect_results(project, group.count());
    train::write_sweep_json(project, plan, group.ranks_per_model(), results);
    log::info("summary: ", group.count(), " models, ranked by validation loss (",
              (project / "sweep.json").string(), "):");
    for (const auto& line : train::rank_models(plan, results)) log::info("summary:   ", line);
    for (const auto& result : results) {
      if (result.status == "preempted") status = train::kExitPreempted;
      if (result.status != "finished" && status == 0) status = 1;
    }
  }
  AT_MPI_CHECK(MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return status;
}

}  // namespace autotrain::cli
