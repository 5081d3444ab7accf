#include "autotrain/train/batch_size_finder.hpp"

#include <mpi.h>

#include <new>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/train/memory_plan.hpp"

namespace autotrain::train {

BatchFit find_batch_size(int64_t per_rank_sequences, double budget_bytes,
                         const std::function<double(int64_t)>& needed_bytes,
                         std::string_view budget_text) {
  AT_CHECK(per_rank_sequences >= 1, "internal: ", per_rank_sequences, " sequences per rank");
  // The need grows with b: the first divisor from the top that fits is the largest.
  for (int64_t b = per_rank_sequences; b >= 1; --b) {
    if (per_rank_sequences % b != 0) continue;
    const double needed = needed_bytes(b);
    if (needed <= budget_bytes) return {b, per_rank_sequences / b, needed};
  }
  throw Error(cat("auto_find_batch_size: even batch_size 1 needs ", human_bytes(needed_bytes(1)),
                  " per rank, more than ", budget_text,
                  "; the model does not fit: make the model or block_size smaller, raise "
                  "zero_stage or use more ranks"));
}

namespace {

// This rank's plan and fit in `budget` bytes (kBatchMemoryFraction of `memory_text`); "" or why
// nothing fits.
std::string fit_on_this_rank(const RunSetup& setup, double budget, const std::string& memory_text,
                             MemoryPlan& plan, BatchFit& fit) {
  const auto& params = setup.params();
  try {
    AT_CHECK(budget > 0, "auto_find_batch_size: this rank has no memory known or left (",
             memory_text, "); set batch_size and auto_find_batch_size: false");
    plan = memory_plan(setup);
    fit = find_batch_size(
        params.batch_size * params.gradient_accumulation, budget,
        [&plan](int64_t b) { return plan.bytes(b); },
        cat(static_cast<int>(kBatchMemoryFraction * 100), "% of ", memory_text, " (",
            plan.describe(1), ")"));
    return {};
  } catch (const Error& error) {
    return error.what();
  } catch (const std::bad_alloc&) {
    // The plan measures one sequence's activations on the model itself: not even they fit.
    return cat("auto_find_batch_size: the activations of one sequence of block_size ",
               params.block_size, " cannot be allocated in ", memory_text,
               "; the model does not fit: make the model or block_size smaller, raise "
               "zero_stage or use more ranks");
  }
}

}  // namespace

void choose_batch_size(RunSetup& setup, double memory_bytes, const std::string& memory_text) {
  config::TrainingParams& params = setup.resolved.params;
  if (!params.auto_find_batch_size) return;
  const int64_t sequences = params.batch_size * params.gradient_accumulation;
  const double budget = kBatchMemoryFraction * memory_bytes;
  MemoryPlan plan;
  BatchFit fit;
  const std::string failure = fit_on_this_rank(setup, budget, memory_text, plan, fit);
  agree_or_throw(failure.empty(), failure, setup.comm, "auto_find_batch_size");
  // Every rank takes the smallest fit of the ranks: each rank's plan then fits its memory.
  long long chosen = fit.batch_size;
  allreduce_or_abort(&chosen, 1, MPI_LONG_LONG, MPI_MIN, setup.comm, "auto_find_batch_size");
  params.batch_size = chosen;
  params.gradient_accumulation = sequences / chosen;
  const std::string why = cat(
      "derived from auto_find_batch_size (", sequences, " sequences per rank and step; ", chosen,
      " per micro-step need ", human_bytes(plan.bytes(chosen)), " of the ", human_bytes(budget),
      " available: ", static_cast<int>(kBatchMemoryFraction * 100), "% of ", memory_text,
      chosen < fit.batch_size ? "; the smallest fit of the ranks" : "", ")");
  setup.resolved.provenance["batch_size"] = why;
  setup.resolved.provenance["gradient_accumulation"] = why;
}

}  // namespace autotrain::train
