#pragma once
// What generate_text (src/train/generate.cpp) samples from: the logits of the token that follows
// a window of the sequence, computed by the CPU model (a key/value cache) or the device model
// (src/train/gpu/generate.cpp, builds with CUDA only).
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "autotrain/train/generate.hpp"

namespace autotrain::train {

class NextTokenLogits {
 public:
  virtual ~NextTokenLogits() = default;
  // Logits [vocab_size] of the token after `window` (1..block_size tokens), valid until the next
  // call. Unless `restart`, `window` is the previous call's window plus one token, so a model with
  // a key/value cache needs to run that one token only.
  virtual std::span<const float> logits(std::span<const std::int32_t> window, bool restart) = 0;
};

#ifdef AUTOTRAIN_HAVE_CUDA
// "cuda:0 (NVIDIA H200)": the GPU generate runs on (the first visible one).
std::string gpu_generate_device_name();

// Binds the first visible GPU and allocates everything there before the first token: the
// parameters in `precision`, and the device model for one sequence of `window` positions
// (<= block_size), the longest window the generation will use.
std::unique_ptr<NextTokenLogits> make_gpu_next_token_logits(const LoadedModel& loaded,
                                                            Precision precision, int window);
#endif

}  // namespace autotrain::train
