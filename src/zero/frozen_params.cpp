// A ZeRO engine's frozen weights (frozen_params.hpp).
#include "frozen_params.hpp"

#include <span>

#include "autotrain/core/error.hpp"
#include "autotrain/zero/partition.hpp"

namespace autotrain::zero {

FrozenParams::FrozenParams(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                           int stage, int prefetch, const model::ParamSource& source)
    : layout_(layout) {
  if (stage < 3) {
    values_.assign(layout.padded_size(), 0.0f);
    source.fill(layout, values_, 0);
    return;
  }
  const std::vector<std::size_t> offsets = shard_offsets(layout);
  values_.assign(offsets.back(), 0.0f);
  for (int u = 0; u < layout.num_units(); ++u) {
    const model::Range shard = layout.shard(u, comm.rank());
    source.fill(layout,
                std::span<float>(values_.data() + offsets[static_cast<std::size_t>(u)], shard.size),
                shard.offset);
  }
  gatherer_ =
      std::make_unique<ParamGatherer<HostMemory>>(layout, comm, clock, values_.data(), prefetch);
}

const float* FrozenParams::params(int unit) {
  if (gatherer_) return gatherer_->acquire(unit);
  AT_CHECK(unit >= 0 && unit < layout_.num_units(), "ZeRO: frozen unit ", unit, " out of range");
  return values_.data() + layout_.units()[static_cast<std::size_t>(unit)].offset;
}

void FrozenParams::release(int unit) {
  if (gatherer_) gatherer_->release(unit);
}

float* FrozenParams::grads(int unit) {
  throw Error(cat("internal: grads(", unit, ") of a frozen unit (frozen weights have none)"));
}

void FrozenParams::begin_training_micro_step() {
  if (gatherer_) gatherer_->begin_training_micro_step();
}

std::size_t FrozenParams::bytes() const {
  return values_.size() * sizeof(float) + (gatherer_ ? gatherer_->bytes() : 0);
}

}  // namespace autotrain::zero
