#pragma once
// Activation checkpointing's three modes: what a block's forward keeps for its backward, and what
// backward recomputes before differentiating the block (the parameter `recompute`,
// docs/training.md#activation-checkpointing). Every mode gives the same bits: a recomputation
// runs the same kernels on the same inputs as the forward did.
//   none       every activation of every block is kept (disable_gradient_checkpointing true).
//   selective  each block keeps what is costly to recompute: the residual stream, the QKV
//              projection's output, the attention's output and its softmax (or its log-sum-exp
//              rows), the MLP's first projection's output (the GELU's, or the gated unit's,
//              input) and the branch outputs; backward recomputes the norms' outputs and the
//              activation function's output, elementwise work and no product (llm.c's recompute
//              levels 1 and 2). AutoTrain's default (disable_gradient_checkpointing false).
//   full       each block keeps only its input (the stream); backward reruns the block's forward:
//              about one more forward of compute.
// A family's activations come in three kinds by what they cost: the stream (always a slot per
// layer), the cheap tensors (one slot that every block overwrites unless none) and the costly
// ones (one slot under full only); slot_of() says which slot layer l's tensor of a kind uses.
#include <cstddef>
#include <string_view>

namespace autotrain::model {

enum class Recompute { none, selective, full };

// "none" | "selective" | "full"; throws Error naming the value otherwise.
Recompute parse_recompute(std::string_view value);
const char* recompute_name(Recompute mode);

enum class Kept { stream, cheap, costly };

// Layers that hold a kind's tensors: n_layer, or 1 where every block shares one slot.
inline std::size_t slots_of(Kept kind, Recompute mode, std::size_t layers) {
  if (kind == Kept::stream) return layers;
  if (kind == Kept::cheap) return mode == Recompute::none ? layers : 1;
  return mode == Recompute::full ? 1 : layers;
}
// The slot of layer l's tensor of a kind.
inline std::size_t slot_of(Kept kind, Recompute mode, int l) {
  return slots_of(kind, mode, 2) == 1 ? 0 : static_cast<std::size_t>(l);
}

}  // namespace autotrain::model
