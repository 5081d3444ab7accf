#pragma once
// The files of a split in a dataset folder laid out as datasets on the Hugging Face Hub are,
// found by the `datasets` library's rules for a repository without a loading script or a YAML
// configuration (its data_files patterns): first a folder named after the split or one of its
// synonyms (train, training; validation, valid, dev, val; test, testing, eval, evaluation), at
// any depth, the name standing alone or followed by a separator (-._ space or digit: `train/`,
// `data_train-2/`); else a file whose name holds the keyword between separators
// (`openassistant_best_replies_train.jsonl`, `train-00000-of-00001.parquet`); else, for the
// train split, every data file when none names any split. Data files: .csv, .jsonl, .parquet;
// hidden files and folders are skipped. text_input.cpp asks here after its own layouts.
#include <filesystem>
#include <string>
#include <vector>

#include "autotrain/data/text_input.hpp"

namespace autotrain::data {

// The split's files in path order; empty when the folder has none for it.
std::vector<InputFile> hf_split_files(const std::filesystem::path& folder, const std::string& split,
                                      bool is_train);

}  // namespace autotrain::data
