// A YAML config in AutoTrain's layout (--config): parsed, resolved and validated, then written
// back as training_params.json.
#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("config.yaml", fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] {
    auto resolved = config::default_params();
    config::apply_yaml_file(resolved, path);
    config::resolve_params(resolved, model::folder_shape);
    (void)config::to_json(resolved.params).dump();
    (void)config::render_params_table(resolved);
  });
  return 0;
}
