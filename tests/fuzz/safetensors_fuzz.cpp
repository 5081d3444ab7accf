// A safetensors file (a model folder's model.safetensors): the header checked, every tensor
// read and converted to fp32.
#include "autotrain/ckpt/safetensors.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("model.safetensors", fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] {
    const ckpt::SafetensorsFile file(path);
    for (const auto& entry : file.entries()) {
      if (entry.end - entry.begin > size) __builtin_trap();  // a tensor beyond the file
      const auto values = file.read(entry.name);
      if (values.size() != entry.elements()) __builtin_trap();
    }
  });
  return 0;
}
