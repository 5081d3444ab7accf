// A model folder's config.json (generate and export read it).
#include "autotrain/train/model_folder_config.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("model/config.json", fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] { (void)train::read_model_config(path.parent_path()); });
  return 0;
}
