#include "autotrain/model/config.hpp"

#include <cstdint>
#include <limits>

#include "autotrain/core/error.hpp"

namespace autotrain::model {

int round_up_vocab(int vocab_size, int multiple) {
  const int64_t rounded = (int64_t{vocab_size} + multiple - 1) / multiple * multiple;
  AT_CHECK(rounded <= std::numeric_limits<int>::max(), "model config: vocab_size ", vocab_size,
           " is too large (rounded up to a multiple of ", multiple, " it exceeds ",
           std::numeric_limits<int>::max(), ")");
  return static_cast<int>(rounded);
}

ModelConfig ModelConfig::gpt2(int n_layer, int n_head, int n_embd, int block_size, int vocab_size) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.block_size = block_size;
  c.vocab_size = vocab_size;
  c.padded_vocab_size = round_up_vocab(vocab_size);
  return c;
}

void ModelConfig::validate() const {
  auto positive = [](const char* field, int value) {
    AT_CHECK(value >= 1, "model config: ", field, " must be >= 1, got ", value);
  };
  positive("n_layer", n_layer);
  positive("n_head", n_head);
  positive("n_embd", n_embd);
  positive("block_size", block_size);
  positive("vocab_size", vocab_size);
  AT_CHECK(n_embd % n_head == 0, "model config: n_embd (", n_embd,
           ") must be divisible by n_head (", n_head, ")");
  AT_CHECK(padded_vocab_size >= vocab_size, "model config: padded_vocab_size (", padded_vocab_size,
           ") must be >= vocab_size (", vocab_size, ")");
}

}  // namespace autotrain::model
