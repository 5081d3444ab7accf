// A Parquet file as a dataset hands it over (Hugging Face datasets' format): the bytes are
// train.parquet, read with the columns of tests/data/hf_reference/write_parquet.mjs (each
// optional, so a file whose names were mutated still has its pages decoded where it can).
#include <string>

#include "autotrain/data/text_input.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("train.parquet", fuzz::as_text(data, size));
  std::vector<data::Column> columns;
  for (const char* name : {"text", "messages", "tags", "meta", "score", "id", "flag"}) {
    columns.push_back({name, "text_column", false});
  }
  fuzz::expect_error_or_success([&] {
    size_t rows = 0;
    data::read_records({path, data::InputFormat::parquet}, columns,
                       [&](std::vector<nlohmann::ordered_json>&& values, size_t) {
                         if (values.size() != columns.size()) __builtin_trap();
                         ++rows;
                       });
  });
  return 0;
}
