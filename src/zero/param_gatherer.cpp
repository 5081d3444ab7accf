#include "param_gatherer.hpp"

#include <algorithm>

#include "autotrain/zero/partition.hpp"

namespace autotrain::zero {

ParamGatherer::ParamGatherer(const model::ParamLayout& layout, Communicator& comm, WaitClock& clock,
                             std::span<const float> shard, int prefetch)
    : layout_(layout),
      comm_(comm),
      shard_(shard),
      shard_offsets_(shard_offsets(layout)),
      slots_(plan_gather_slots(layout, prefetch)),
      schedule_(layout.num_units(), prefetch, slots_.unit0_own_slot, clock,
                [this](std::size_t slot, int unit) { return start_gather(slot, unit); }) {
  for (std::size_t s = 0; s < schedule_.slots(); ++s) {
    buffers_.emplace_back(slots_.capacity(s), 0.0f);
  }
}

CommHandle ParamGatherer::start_gather(std::size_t slot, int unit) {
  return comm_.allgather_async(shard_.data() + shard_offsets_[static_cast<std::size_t>(unit)],
                               buffers_[slot].data(), layout_.shard(unit, 0).size, DType::fp32);
}

std::size_t ParamGatherer::bytes() const {
  std::size_t bytes = 0;
  for (const auto& buffer : buffers_) bytes += buffer.size() * sizeof(float);
  return bytes;
}

}  // namespace autotrain::zero
