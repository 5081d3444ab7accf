#include "autotrain/cli/commands.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::cli {

int run_env(const std::vector<std::string>&, MpiSession&) {
  throw CollectiveError("env is not built yet");
}

}  // namespace autotrain::cli
