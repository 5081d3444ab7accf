#pragma once
// The rows of a model's kernel profile (bench train --profile): the CPU and the CUDA models time
// the same kernel kinds and report them in the same order.
#include <string>

#include "autotrain/model/config.hpp"

namespace autotrain::model {

// Seconds spent per kernel kind, forward and backward, when profiling is on.
struct ProfileEntry {
  std::string name;
  double forward_s = 0;
  double backward_s = 0;
};

// The kernel kinds of a profile, in its row order: the CPU and the CUDA models report the same.
// kNorm is the family's normalisation (LayerNorm, RMSNorm), kActivation its MLP activation
// (GELU, SwiGLU, GeGLU).
enum ProfileOp : int {
  kEncoder,
  kNorm,
  kMatmul,
  kAttention,
  kActivation,
  kResidual,
  kLmHead,
  kCrossEntropy,
  kOpCount
};
// A row's name: the kernel kind, the norm and the activation named as the model computes them.
inline const char* profile_op_name(int op, const ModelConfig& config) {
  constexpr const char* kNames[kOpCount] = {"encoder", "layernorm", "matmul",  "attention",
                                            "gelu",    "residual",  "lm_head", "crossentropy"};
  if (config.family == Family::llama && op == kNorm) return "rmsnorm";
  if (config.family == Family::llama && op == kActivation) {
    return config.gate == GateActivation::silu ? "swiglu" : "geglu";
  }
  return kNames[op];
}

}  // namespace autotrain::model
