#pragma once
// Optimizers over ranges of the flat fp32 buffers (DESIGN.md contract 1). Each rank updates only
// the ranges it owns (all of them in DDP, its shard under ZeRO); a range knows whether weight
// decay applies (not to biases and layernorm weights, as Hugging Face's Trainer does).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "autotrain/core/zeroed_floats.hpp"
#include "autotrain/optim/adamw_8bit.hpp"
#include "autotrain/optim/adamw_kernel.hpp"

namespace autotrain {

// A contiguous run [begin, end) of the flat buffer with one weight-decay setting.
struct ParamSegment {
  size_t begin = 0;
  size_t end = 0;
  bool decay = true;
};

// adamw_8bit: AdamW with 8-bit blockwise moments (optim/adamw_8bit.hpp). Its logical state is
// AdamW's (m and v, what checkpoints hold), so the two load each other's checkpoints.
enum class OptimizerKind { adamw, adamw_8bit, sgd };

// Accepts AutoTrain's names: adamw_torch, adamw_hf, adamw, adamw_torch_fused, adamw_apex_fused,
// paged_adamw_32bit -> AdamW; adamw_8bit, adamw_bnb_8bit, paged_adamw_8bit -> 8-bit AdamW;
// sgd -> SGD. ("paged" is bitsandbytes' state in CUDA unified memory, which autotrain does not
// use: paged_optimizer says so.) Throws Error listing the accepted names otherwise.
OptimizerKind parse_optimizer(std::string_view name, std::string_view source);

// Whether `name` (an accepted one) asks for bitsandbytes' paged state.
bool paged_optimizer(std::string_view name);

// The name checkpoints record: "adamw", "adamw_8bit" or "sgd".
const char* optimizer_name(OptimizerKind kind);

// Whether the two keep the same logical state (AdamW's m and v, 32-bit or 8-bit).
bool same_optimizer_state(OptimizerKind a, OptimizerKind b);

// Bytes of optimizer state per element of state (adamw: 8; adamw_8bit: 2 plus two fp32 absmax a
// block of 2048; sgd: 4).
double optimizer_state_bytes_per_element(OptimizerKind kind);

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::adamw;
  float beta1 = 0.9f;     // AdamW
  float beta2 = 0.999f;   // AdamW
  float eps = 1e-8f;      // AdamW
  float momentum = 0.9f;  // SGD
  float weight_decay = 0.0f;
};

// AdamW's step arguments from `settings` at learning rate `lr`, gradient scale `grad_scale`
// and step number `step` (weight decay left 0: callers set it per segment).
AdamWStepArgs adamw_step_args(const OptimizerSettings& settings, float lr, float grad_scale,
                              long long step);

// State lives in "shard space": one slot per element of the ranges this rank owns, in the order
// of the segments. AdamW keeps m and v (8 bytes/element), SGD one momentum buffer, the 8-bit AdamW
// m and v as codes and block absmaxes (optim/adamw_8bit.hpp), which checkpoints see as fp32
// through staged copies (stage_moments, load_staged_moments).
class Optimizer {
 public:
  // `segments` are the owned ranges in flat-buffer coordinates, in increasing order.
  Optimizer(const OptimizerSettings& settings, std::vector<ParamSegment> segments);

  // One update at learning rate `lr`. `params` and `grads` are indexed in flat-buffer
  // coordinates minus `base` (so a shard buffer whose element 0 is flat index `base` works).
  // `grad_scale` multiplies every gradient first (gradient clipping).
  void step(std::span<float> params, std::span<const float> grads, size_t base, float lr,
            float grad_scale);

  long long steps_taken() const { return steps_; }
  void set_steps_taken(long long steps) { steps_ = steps; }
  // Elements of logical state (m and v: twice the owned elements; SGD: once).
  size_t state_elements() const {
    return elements_ * (settings_.kind == OptimizerKind::sgd ? 1 : 2);
  }
  // What the state takes in memory (the 8-bit AdamW's codes and absmaxes; no staged copy).
  size_t state_bytes() const;
  // AdamW: m, v; SGD: momentum, (empty). Same order as the segments. The 8-bit AdamW: the staged
  // fp32 copies, empty unless stage_moments() made them.
  std::span<float> first_moment() { return first_moment_; }
  std::span<float> second_moment() { return second_moment_; }
  const std::vector<ParamSegment>& segments() const { return segments_; }
  const OptimizerSettings& settings() const { return settings_; }

  // The 8-bit AdamW (no-ops for the others): stage_moments() dequantizes m and v into fp32 copies
  // that first_moment()/second_moment() return, for a checkpoint to write or to read into; they
  // stay until the next step() (a save) or load_staged_moments() (a load), which requantizes them
  // (each block's absmax the largest |value| of its staged elements) and frees them.
  void stage_moments();
  void load_staged_moments();

 private:
  // The 8-bit state, allocated by the first step or load (until then every moment is 0).
  void allocate_quantized();

  OptimizerSettings settings_;
  std::vector<ParamSegment> segments_;
  size_t elements_ = 0;
  // Zeros that become resident when a step first writes them (an export never does).
  ZeroedFloats first_moment_;
  ZeroedFloats second_moment_;
  // adamw_8bit: codes and absmaxes of m and v (Moments8bit), and the step's pieces (reused).
  std::vector<std::uint8_t> m_codes_, v_codes_;
  std::vector<float> m_absmax_, v_absmax_;
  std::vector<StatePiece> pieces_;
  long long steps_ = 0;
};

}  // namespace autotrain
