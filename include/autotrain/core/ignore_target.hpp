#pragma once
// The target id of a position that carries no loss: the prompt and user turns of a conversation
// trained with completion-only loss (PyTorch's ignore_index is -100; ours is -1). The sampler
// writes it (data/sampler.hpp), the cross-entropy kernels skip it (kernels/crossentropy.hpp).
#include <cstdint>

namespace autotrain {

inline constexpr std::int32_t kIgnoreTarget = -1;

}  // namespace autotrain
