// The `train` command line: arguments are the input's NUL-separated pieces. The flags are
// applied and resolved like load_params() does; --config and --training-config files are not
// opened (their formats have targets of their own).
#include <string>
#include <vector>

#include "autotrain/config/command_line.hpp"
#include "autotrain/model/folder.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  for (const auto piece : fuzz::split_at_nul(fuzz::as_text(data, size), 64)) {
    args.emplace_back(piece);
  }
  fuzz::expect_error_or_success([&] {
    const auto line = config::parse_train_command_line(args);
    auto resolved = config::default_params();
    config::apply_flags(resolved, line.flags);
    config::resolve_params(resolved, model::folder_shape);
  });
  return 0;
}
