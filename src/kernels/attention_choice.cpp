#include "autotrain/kernels/attention_choice.hpp"

#include "autotrain/core/error.hpp"

namespace autotrain::kernels {

namespace {

constexpr const char* kFlashNeeds =
    "the flash kernels need bf16/fp16 and a head size of 16, 32, 48, 64, 96, 128 or 256";

AttentionChoice fused_or_fallback(AttentionKind kind, bool flash_applies,
                                  const std::string& cudnn_refusal) {
  if (cudnn_refusal.empty()) return {AttentionPath::cudnn, "cuDNN's plans built"};
  const std::string asked = kind == AttentionKind::cudnn ? "AUTOTRAIN_CUDA_ATTENTION=cudnn, " : "";
  if (flash_applies) return {AttentionPath::flash, asked + "cuDNN: " + cudnn_refusal};
  return {AttentionPath::unfused, asked + "cuDNN: " + cudnn_refusal + "; " + kFlashNeeds};
}

}  // namespace

AttentionChoice choose_attention(AttentionKind kind, bool flash_applies,
                                 const std::string& cudnn_refusal) {
  switch (kind) {
    case AttentionKind::fast:
      return {AttentionPath::unfused, "AUTOTRAIN_CUDA_ATTENTION=fast"};
    case AttentionKind::reference:
      return {AttentionPath::unfused, "AUTOTRAIN_CUDA_ATTENTION=reference"};
    case AttentionKind::flash:
      if (flash_applies) return {AttentionPath::flash, "AUTOTRAIN_CUDA_ATTENTION=flash"};
      return {AttentionPath::unfused,
              std::string("AUTOTRAIN_CUDA_ATTENTION=flash, but ") + kFlashNeeds};
    case AttentionKind::automatic:  // cuDNN's is opt-in until a GPU has checked it
      if (flash_applies) return {AttentionPath::flash, "the default where flash applies"};
      return {AttentionPath::unfused, std::string("the default: ") + kFlashNeeds};
    case AttentionKind::cudnn:
      return fused_or_fallback(kind, flash_applies, cudnn_refusal);
  }
  throw Error("internal: unknown AttentionKind");
}

}  // namespace autotrain::kernels
