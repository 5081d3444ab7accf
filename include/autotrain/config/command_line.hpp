#pragma once
// The `train` subcommand's command line, parsed with Boost.Program_options:
//
//   autotrain train [--config x.yaml] [--training-config training_params.json]
//                   [--dry-run] [--allow-changed-params] [--help] [--<parameter> VALUE ...]
//
// Every parameter is a flag in kebab case and in snake case (--batch-size 8, --batch_size 8).
// Booleans take true|false and a bare --flag means true, so defaults of true can be switched
// off (--add-eos-token false), which AutoTrain's CLI cannot do.
#include <filesystem>
#include <string>
#include <vector>

#include "autotrain/config/load.hpp"

namespace autotrain::config {

struct TrainCommandLine {
  std::filesystem::path config;           // --config (YAML)
  std::filesystem::path training_config;  // --training-config (JSON)
  std::vector<FlagValue> flags;           // parameter overrides, in command-line order
  bool dry_run = false;
  bool allow_changed_params = false;  // resume may change the optimisation parameters
  bool help = false;
  // Not on the command line: what this rank's model changes among several (sweep.hpp).
  std::vector<FlagValue> model_changes;

  ConfigInputs inputs() const { return {config, training_config, flags, model_changes}; }
};

// Throws Error for an unknown option (suggesting the closest one: "unknown option
// '--batch-sise' (did you mean '--batch-size'?)"), a missing value, a stray argument or an option
// given twice. Values are not checked here; load_params() checks them.
TrainCommandLine parse_train_command_line(const std::vector<std::string>& args);

// `autotrain train --help`: usage, the options, then every parameter with its type, default and
// allowed values.
std::string train_help_text();

// The Markdown table of every parameter (name, type, default, allowed values, meaning) that
// docs/configuration.md embeds; a test keeps the committed file in step with the table.
std::string params_markdown_table();

}  // namespace autotrain::config
