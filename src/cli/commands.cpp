#include "autotrain/cli/app.hpp"
#include "autotrain/cli/commands.hpp"

namespace autotrain::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"train", "train a model (or check the plan with --dry-run)", run_train},
      {"env", "show the rank topology, devices and build", run_env},
  };
  return table;
}

}  // namespace autotrain::cli
