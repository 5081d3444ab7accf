#pragma once
// auto_find_batch_size: the largest per-rank micro-batch that the memory plan fits in the rank's
// memory, with gradient accumulation taking the rest of the per-rank sequences of an optimizer
// step, so the global batch (and with it the data order and the losses) stays what the
// parameters said. transformers retries after an out-of-memory error; autotrain knows its
// memory before it allocates (memory_plan.hpp), so it decides once, before the first step.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// The share of a rank's memory the plan may fill: the rest is the margin for what the plan does
// not count (the allocator's slack, the communicator's and the BLAS libraries' buffers).
inline constexpr double kBatchMemoryFraction = 0.9;

struct BatchFit {
  int64_t batch_size = 1;
  int64_t gradient_accumulation = 1;
  double needed_bytes = 0;  // the plan at batch_size
};

// The largest divisor b of `per_rank_sequences` with needed_bytes(b) <= budget_bytes; the
// accumulation is per_rank_sequences / b. `budget_text` says what the budget is ("90% of 16.0
// GiB on cuda:0"). Throws Error naming the need of batch_size 1 and the budget when even it
// does not fit.
BatchFit find_batch_size(int64_t per_rank_sequences, double budget_bytes,
                         const std::function<double(int64_t)>& needed_bytes,
                         std::string_view budget_text);

// With auto_find_batch_size: sets batch_size and gradient_accumulation of setup.resolved to the
// fit of every rank's plan in `memory_bytes` (this rank's memory, described by `memory_text`),
// the smallest over the ranks of setup.comm, with their provenance. Collective over setup.comm;
// a rank where nothing fits is a CollectiveError on all. Without it, does nothing.
void choose_batch_size(RunSetup& setup, double memory_bytes, const std::string& memory_text);

}  // namespace autotrain::train
