// A training_params.json (--training-config, or a project's own on resume).
#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("training_params.json", fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] {
    auto resolved = config::default_params();
    config::apply_json_file(resolved, path);
    config::resolve_params(resolved, model::folder_shape);
    (void)config::to_json(resolved.params).dump();
  });
  return 0;
}
