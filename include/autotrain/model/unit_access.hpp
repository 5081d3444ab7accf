#pragma once
// How a model reaches its parameters and gradients: one unit at a time, through four hooks, in
// the order its family documents (model/gpt2.hpp, model/llama.hpp; ParamLayout::hook_order()).
// A ZeRO engine implements them to gather a unit just before it is used, free it right after,
// and reduce a unit's gradients as soon as backward is done with it. One interface for both
// devices: F is the element type (float or double on the CPU; float, __nv_bfloat16 or __half on a
// CUDA device) and the pointers point where the model runs.
//
// On a CUDA device, params(u) must be usable by work queued on the model's stream after the call
// returns (an engine that gathers on another stream makes the model's stream wait on it), and
// grads_ready(u) is called on the host right after the unit's last gradient kernel is queued: an
// engine orders its reduction after that point of the model's stream (an event).
#include "autotrain/core/error.hpp"
#include "autotrain/model/linear_adapter.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

template <typename F>
class BasicUnitAccess {
 public:
  virtual ~BasicUnitAccess() = default;
  virtual const F* params(int unit) = 0;     // before the unit is used, forward and backward
  virtual void release(int /*unit*/) {}      // after each use
  virtual F* grads(int unit) = 0;            // where the unit's gradients accumulate (+=)
  virtual void grads_ready(int /*unit*/) {}  // every contribution to the unit is in
  // True when the caller needs none of the unit's gradients (LoRA's units without adapters): a
  // model may then skip computing them and not call grads(unit); grads_ready(unit) still comes.
  virtual bool frozen(int /*unit*/) const { return false; }
  // The extra term of the unit's linear layers (model/linear_adapter.hpp: LoRA's adapter dropout
  // in training), or null when they are plain; asked by the CPU models once per use of the unit,
  // after params(unit).
  virtual BasicLinearAdapter<F>* linear_adapter(int /*unit*/) { return nullptr; }
};

// Whole flat buffers in the padded layout, as data parallel stage 0, inference and the tests use
// them. grads may be null when only forward or inference runs.
template <typename F>
class BasicFlatUnitAccess final : public BasicUnitAccess<F> {
 public:
  BasicFlatUnitAccess(const ParamLayout& layout, const F* params, F* grads)
      : layout_(layout), params_(params), grads_(grads) {}
  const F* params(int unit) override { return params_ + layout_.units()[unit].offset; }
  F* grads(int unit) override {
    AT_CHECK(grads_ != nullptr, "this UnitAccess has no gradient buffer (inference only)");
    return grads_ + layout_.units()[unit].offset;
  }

 private:
  const ParamLayout& layout_;
  const F* params_;
  F* grads_;
};

using UnitAccess = BasicUnitAccess<float>;
using FlatUnitAccess = BasicFlatUnitAccess<float>;

}  // namespace autotrain::model
