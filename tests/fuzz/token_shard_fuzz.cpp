// A token shard (llm.c's format: a 256-int header, then uint16 or uint32 ids): opened, and
// every token read through the dataset.
#include <algorithm>
#include <vector>

#include "autotrain/data/shard.hpp"
#include "fuzz_support.hpp"

using namespace autotrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::put("shards/train_000000.bin", fuzz::as_text(data, size));
  fuzz::expect_error_or_success([&] {
    const auto dataset = data::TokenDataset::open(path.parent_path(), "train");
    std::vector<int32_t> tokens(std::min<uint64_t>(dataset.num_tokens(), 1u << 16));
    dataset.copy(0, tokens);
    dataset.check_ids_below(1 << 17);
    if (dataset.num_tokens() * 2 > size) __builtin_trap();  // more tokens than the file holds
  });
  return 0;
}
