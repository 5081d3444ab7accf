#pragma once
// The models' check of the token ids they are given (CPU and device model alike): each must be
// a row of the embedding table, [0, vocab_size).
#include <cstddef>
#include <cstdint>

#include "autotrain/core/error.hpp"

namespace autotrain::model {

inline void check_tokens(const std::int32_t* tokens, std::size_t count, int vocab_size,
                         const char* what) {
  for (std::size_t i = 0; i < count; ++i) {
    AT_CHECK(tokens[i] >= 0 && tokens[i] < vocab_size, "model: ", what, "[", i, "] = ", tokens[i],
             " is not a token id in [0, vocab_size = ", vocab_size, ")");
  }
}

}  // namespace autotrain::model
