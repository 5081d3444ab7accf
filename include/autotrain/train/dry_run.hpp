#pragma once
// `train --dry-run`: everything a run checks before its first step that costs no training.
#include <string>

#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// Collective over MPI_COMM_WORLD. Checks the data (the input files exist, the first record of
// each csv/jsonl file has text_column, the tokenizer loads and its vocabulary fits vocab_size, a
// prepared data_path was made with it) on rank 0, and the checkpoint a resume would continue
// from (plan_resume) on all ranks. Returns the plan's lines about them; throws the
// CollectiveError the run would meet.
std::string check_run(const RunSetup& setup);

}  // namespace autotrain::train
