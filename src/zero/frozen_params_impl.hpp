#pragma once
// BasicFrozenParams' member definitions (frozen_params.hpp), included where it is instantiated
// for a Memory policy: frozen_params.cpp (the host), gpu/memory.cpp (a device).
#include <span>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/zero/partition.hpp"
#include "frozen_params.hpp"

namespace autotrain::zero {

template <typename Memory>
BasicFrozenParams<Memory>::BasicFrozenParams(const model::ParamLayout& layout, Communicator& comm,
                                             WaitClock& clock, int stage, int prefetch,
                                             const model::ParamSource& source, Memory memory,
                                             const ShardMaker<F>* offload)
    : layout_(layout), memory_(std::move(memory)) {
  AT_CHECK(offload == nullptr || stage == 3, "internal: frozen weights offloaded need stage 3");
  const std::vector<std::size_t> offsets = shard_offsets(layout);
  if (offload != nullptr) {
    offloaded_ = (*offload)(offsets.back(), "frozen");
  } else {
    values_ = memory_.allocate(stage < 3 ? layout.padded_size() : offsets.back());
  }
  std::vector<float> unit_values;
  std::vector<F> rounded;  // offloaded: the unit's values in F, then stored
  for (int u = 0; u < layout.num_units(); ++u) {
    const auto& info = layout.units()[static_cast<std::size_t>(u)];
    // The whole unit, or the rank's shard of it (stage 3), at its place in values_.
    const model::Range range =
        stage < 3 ? model::Range{0, info.padded_numel} : layout.shard(u, comm.rank());
    const std::size_t at = stage < 3 ? info.offset : offsets[static_cast<std::size_t>(u)];
    unit_values.assign(range.size, 0.0f);
    source.fill(layout, unit_values, (stage < 3 ? info.offset : 0) + range.offset);
    if (offloaded_) {
      rounded.resize(range.size);
      Memory::upload_host(rounded.data(), unit_values.data(), range.size);
      offloaded_->store(at, rounded.data(), range.size);
    } else {
      memory_.upload(Memory::data(values_) + at, unit_values.data(), range.size);
    }
  }
  if (stage == 3) {
    gatherer_ = std::make_unique<ParamGatherer<Memory>>(layout, comm, clock, Memory::data(values_),
                                                        prefetch, memory_, offloaded_.get());
  }
}

template <typename Memory>
auto BasicFrozenParams<Memory>::params(int unit) -> const F* {
  if (gatherer_) return gatherer_->acquire(unit);
  AT_CHECK(unit >= 0 && unit < layout_.num_units(), "ZeRO: frozen unit ", unit, " out of range");
  return Memory::data(values_) + layout_.units()[static_cast<std::size_t>(unit)].offset;
}

template <typename Memory>
void BasicFrozenParams<Memory>::release(int unit) {
  if (gatherer_) gatherer_->release(unit);
}

template <typename Memory>
auto BasicFrozenParams<Memory>::grads(int unit) -> F* {
  throw Error(cat("internal: grads(", unit, ") of a frozen unit (frozen weights have none)"));
}

template <typename Memory>
void BasicFrozenParams<Memory>::begin_training_micro_step() {
  if (gatherer_) gatherer_->begin_training_micro_step();
}

template <typename Memory>
std::size_t BasicFrozenParams<Memory>::bytes() const {
  return Memory::bytes(values_) + (gatherer_ ? gatherer_->bytes() : 0);
}

}  // namespace autotrain::zero
