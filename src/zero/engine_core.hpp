#pragma once
// What the CPU engine (engine.cpp) and the device engine (gpu/engine.cpp) share, written once
// over the Memory policy (memory.hpp) that says where their buffers live: the unit hooks the
// model calls, forwarded to the gradient reducer and the stage-3 gatherer; the step's call
// sequence up to the optimizer; the frozen weights of hold_frozen; the argument checks of
// gather_unit; and the global gradient norm's last part, the partial sums of the ranks added in
// rank order so every rank has the same bits. An engine derives from EngineCore<Interface,
// Memory>, builds its reducer (and under stage 3 its gatherer) in its constructor, and keeps
// what differs: its buffers, the optimizer step, checkpoints and export.
#include <cmath>
#include <cstddef>
#include <memory>
#include <span>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/engine.hpp"
#include "frozen_params.hpp"
#include "gradients.hpp"
#include "param_gatherer.hpp"
#include "quantized_frozen.hpp"
#include "state_runs.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

template <typename Interface, typename Memory>
class EngineCore : public Interface {
 public:
  using F = typename Memory::Element;

  EngineCore(const model::ParamLayout& layout, Communicator& comm, const EngineOptions& options,
             Memory memory)
      : layout_(layout),
        comm_(comm),
        memory_(memory),
        stage_(options.stage),
        prefetch_(options.prefetch),
        rank_(comm.rank()),
        params_offloaded_(options.offload_param != Offload::none) {}

  int stage() const override { return stage_; }
  int rank() const override { return rank_; }

  // --- model::BasicUnitAccess<F> --------------------------------------------------------------
  // params() is the engine's: where it keeps the whole parameters below stage 3.
  void release(int unit) override {
    if (gatherer_) gatherer_->release(unit);
  }
  F* grads(int unit) override { return gradients_->grads(unit); }
  void grads_ready(int unit) override { gradients_->grads_ready(unit); }

  // --- the step up to the optimizer ----------------------------------------------------------
  void begin_step() override { gradients_->zero(); }
  void begin_micro_step(bool last_micro_step) override {
    gradients_->begin_micro_step(last_micro_step);
    if (gatherer_) gatherer_->begin_training_micro_step();
    if (frozen_) frozen_->begin_training_micro_step();
  }
  // Every reduction waited for on the host (on a device: what is queued on the stream
  // afterwards sees them).
  void finish_backward() override { gradients_->finish(); }

  double take_comm_wait_seconds() override { return clock_.take(); }
  int peak_gathered_units() const override {
    return gatherer_ ? gatherer_->peak_resident_units() : 0;
  }

  // --- frozen weights ------------------------------------------------------------------------
  model::BasicUnitAccess<F>& hold_frozen(const model::ParamLayout& layout,
                                         const model::ParamSource& source,
                                         std::optional<model::QuantOptions> quantization) override {
    AT_CHECK(frozen_ == nullptr, "internal: hold_frozen called twice");
    AT_CHECK(layout.world_size() == comm_.size() && layout.num_units() == layout_.num_units(),
             "internal: the frozen layout has ", layout.num_units(), " units for world size ",
             layout.world_size(), "; the engine's ", layout_.num_units(), " for ", comm_.size());
    if (quantization) {
      AT_CHECK(!params_offloaded_,
               "offload_param_device with quantization: the quantized "
               "frozen weights stay on the device (set one of the two)");
      frozen_ = std::make_unique<BasicQuantizedFrozen<Memory>>(layout, *quantization, comm_, clock_,
                                                               stage_, prefetch_, source, memory_);
    } else {
      frozen_ = std::make_unique<BasicFrozenParams<Memory>>(
          layout, comm_, clock_, stage_, prefetch_, source, memory_,
          params_offloaded_ ? &offload_shard_ : nullptr);
    }
    return *frozen_;
  }
  std::size_t frozen_bytes() const override { return frozen_ ? frozen_->bytes() : 0; }

 protected:
  // The global L2 norm from this rank's sum of squares (its shard: every element counted once,
  // in double): each partial sum travels as two floats (high, low), `exchange(mine)` all-gathers
  // the pairs into 2 · world host floats, and every rank adds them in rank order.
  template <typename Exchange>
  double combine_norm(double sum, const Exchange& exchange) {
    const auto high = static_cast<float>(sum);
    const float mine[2] = {high, static_cast<float>(sum - double{high})};
    const std::span<const float> host = exchange(mine);
    double total = 0;
    for (std::size_t i = 0; i < host.size(); i += 2) {
      total += double{host[i]} + double{host[i + 1]};
    }
    return std::sqrt(total);
  }

  // gather_unit's arguments; the unit's description.
  const model::ParamUnit& check_gather(int unit, std::span<float> out, int root) const {
    const model::ParamUnit& info = checked_unit(layout_, unit);
    AT_CHECK(root >= 0 && root < comm_.size(), "ZeRO: gather_unit root ", root,
             " out of range [0, ", comm_.size(), ")");
    AT_CHECK(rank_ != root || out.size() >= info.numel, "ZeRO: gather_unit(", unit, ") needs ",
             info.numel, " elements, got ", out.size());
    return info;
  }

  // The range the optimizer of `unit` updates on this rank.
  model::Range owned(int unit) const { return owned_range(layout_, stage_, rank_, unit); }

  const model::ParamLayout& layout_;
  Communicator& comm_;
  Memory memory_;
  int stage_;
  int prefetch_;
  int rank_;
  // offload_param: the stage-3 shards (trained and frozen) in host memory or on NVMe, made by
  // offload_shard_ (set by the engine that offloads).
  bool params_offloaded_;
  ShardMaker<F> offload_shard_;
  WaitClock clock_;
  // Built by the engine: fp32 reduced gradients; the stage-3 gatherer of the compute parameters
  // (which reads the engine's shard: an engine's destructor resets it first, since base members
  // outlive the derived class's).
  std::unique_ptr<BasicGradientReducer<F, float>> gradients_;
  std::unique_ptr<ParamGatherer<Memory>> gatherer_;
  std::unique_ptr<BasicFrozenWeights<F>> frozen_;  // hold_frozen's
};

}  // namespace autotrain::zero
