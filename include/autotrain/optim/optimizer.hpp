#pragma once
// Optimizers over ranges of the flat fp32 buffers (DESIGN.md contract 1). Each rank updates only
// the ranges it owns (all of them in DDP, its shard under ZeRO); a range knows whether weight
// decay applies (not to biases and layernorm weights, as Hugging Face's Trainer does).
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "autotrain/core/zeroed_floats.hpp"
#include "autotrain/optim/adamw_kernel.hpp"

namespace autotrain {

// A contiguous run [begin, end) of the flat buffer with one weight-decay setting.
struct ParamSegment {
  size_t begin = 0;
  size_t end = 0;
  bool decay = true;
};

enum class OptimizerKind { adamw, sgd };

// Accepts AutoTrain's names: adamw_torch, adamw_hf, adamw, adamw_apex_fused -> AdamW; sgd -> SGD.
// Throws Error listing the accepted names otherwise.
OptimizerKind parse_optimizer(std::string_view name, std::string_view source);

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
// of the segments. AdamW keeps m and v (8 bytes/element), SGD one momentum buffer.
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
  size_t state_elements() const { return first_moment_.size() + second_moment_.size(); }
  // AdamW: m, v; SGD: momentum, (empty). Same order as the segments.
  std::span<float> first_moment() { return first_moment_; }
  std::span<float> second_moment() { return second_moment_; }
  const std::vector<ParamSegment>& segments() const { return segments_; }
  const OptimizerSettings& settings() const { return settings_; }

 private:
  OptimizerSettings settings_;
  std::vector<ParamSegment> segments_;
  // Zeros that become resident when a step first writes them (an export never does).
  ZeroedFloats first_moment_;
  ZeroedFloats second_moment_;
  long long steps_ = 0;
};

}  // namespace autotrain
