#include "autotrain/cli/commands.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::cli {

int run_train(const std::vector<std::string>&, MpiSession&) {
  throw CollectiveError("training is not built yet");
}

}  // namespace autotrain::cli
