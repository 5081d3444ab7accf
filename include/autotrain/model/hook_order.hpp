#pragma once
// The unit hook order of every decoder-only family (model/unit_access.hpp), written once for
// both devices' drivers (model/decoder_driver.hpp, model/gpu/device_model_base.hpp and
// gpu/decoder_base.hpp): which unit is acquired, used, released and its gradients handed over,
// in which order, around the family's parts. L = n_layer; unit 0 = embeddings, 1..L = blocks,
// L+1 = final norm; the head's unit is 0 when tied, else L+1.
//   forward:   params(0) release(0)                         embedding
//              params(u) release(u)          u = 1..L       blocks
//              params(L+1) [release(L+1) params(0)]         final norm, then the head's unit
//   backward:  tied:   params(0) grads(0) release(0)        the head: dhead +=
//              params(L+1) grads(L+1) release(L+1) grads_ready(L+1)   (untied: the head too)
//              params(u) grads(u) release(u) grads_ready(u) u = L..1
//              grads(0) grads_ready(0)                      embeddings (need no parameters)
// grads(u) is not called for a frozen unit 0 or L+1 (the parts get null gradients there).
// A Clock has restart() (after a hook) and lap(ProfileOp) (after a kernel): the CPU's
// KernelClock, the device's EventClock, or NoClock.
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model {

// The clock of what is not profiled (decoding).
struct NoClock {
  void restart() {}
  void lap(ProfileOp) {}
};

// embed(p); block(l, p, adapter) for each block; final_norm(p). Returns the parameters of the
// head's unit, acquired: its release(head_unit) is the caller's, after the head. A head_unit of
// kNoHead stops after the blocks (a decoder's row whose logits nobody reads) and returns null.
constexpr int kNoHead = -1;
template <typename F, typename Clock, typename Embed, typename Block, typename FinalNorm>
const F* forward_in_hook_order(BasicUnitAccess<F>& access, int L, int head_unit, Clock& clock,
                               Embed&& embed, Block&& block, FinalNorm&& final_norm) {
  const int last = L + 1;
  const F* p = access.params(0);
  clock.restart();
  embed(p);
  clock.lap(kEncoder);
  access.release(0);
  for (int l = 0; l < L; ++l) {
    const int unit = ParamLayout::block_unit(l);
    p = access.params(unit);
    clock.restart();
    block(l, p, access.linear_adapter(unit));
    access.release(unit);
  }
  if (head_unit == kNoHead) return nullptr;
  p = access.params(last);
  clock.restart();
  final_norm(p);
  clock.lap(kNorm);
  if (head_unit == last) return p;
  access.release(last);
  return access.params(head_unit);
}

// What backward runs, in order, after the loss's gradient: head(p, g) (g null when frozen),
// final_norm(p, g), then for each block from the last: recompute(l, p, adapter) where the
// activations were not all kept (activation checkpointing, model/recompute.hpp: the driver
// reruns the block or its cheap part; all but the last block) and
// block(l, p, g, adapter); then embed(g) unless unit 0 is frozen.
template <typename F, typename Clock, typename Head, typename FinalNorm, typename Recompute,
          typename Block, typename Embed>
void backward_in_hook_order(BasicUnitAccess<F>& access, int L, int head_unit, bool recompute,
                            Clock& clock, Head&& head, FinalNorm&& final_norm,
                            Recompute&& recompute_block, Block&& block, Embed&& embed) {
  const int last = L + 1;
  if (head_unit == 0) {
    const F* p = access.params(0);  // before grads(0): the documented order
    head(p, access.frozen(0) ? nullptr : access.grads(0));
    access.release(0);
  }
  {
    const F* p = access.params(last);
    F* g = access.frozen(last) ? nullptr : access.grads(last);
    if (head_unit == last) head(p, g);
    clock.restart();
    final_norm(p, g);
    clock.lap(kNorm);
    access.release(last);
    access.grads_ready(last);
  }
  for (int l = L - 1; l >= 0; --l) {
    const int unit = ParamLayout::block_unit(l);
    const F* p = access.params(unit);
    F* g = access.grads(unit);
    BasicLinearAdapter<F>* adapter = access.linear_adapter(unit);
    clock.restart();
    if (recompute && l != L - 1) recompute_block(l, p, adapter);
    block(l, p, g, adapter);
    access.release(unit);
    access.grads_ready(unit);
  }
  if (!access.frozen(0)) {
    F* g = access.grads(0);
    clock.restart();
    embed(g);
    clock.lap(kEncoder);
  }
  access.grads_ready(0);
}

}  // namespace autotrain::model
