// A prepared data folder's manifest.json (what `prepare` wrote, read by `train`).
#include "autotrain/data/prepare.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path =
      fuzz::put(std::string("prepared/") + data::kManifestName, fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] {
    (void)data::is_prepared_folder(path.parent_path());
    (void)data::read_manifest(path.parent_path());
  });
  return 0;
}
