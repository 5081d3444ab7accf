#pragma once
// The rows of a model's kernel profile (bench train --profile): the CPU and the CUDA models time
// the same kernel kinds and report them in the same order.
#include <string>

namespace autotrain::model {

// Seconds spent per kernel kind, forward and backward, when profiling is on.
struct ProfileEntry {
  std::string name;
  double forward_s = 0;
  double backward_s = 0;
};

// The kernel kinds of a profile, in its row order: the CPU and the CUDA models report the same.
enum ProfileOp : int {
  kEncoder,
  kLayerNorm,
  kMatmul,
  kAttention,
  kGelu,
  kResidual,
  kLmHead,
  kCrossEntropy,
  kOpCount
};
inline constexpr const char* kOpNames[kOpCount] = {
    "encoder", "layernorm", "matmul", "attention", "gelu", "residual", "lm_head", "crossentropy"};

}  // namespace autotrain::model
