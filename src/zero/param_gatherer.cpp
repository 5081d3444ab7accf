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
      schedule_(layout.num_units(), prefetch, clock,
                [this](std::size_t slot, int unit) { return start_gather(slot, unit); }) {
  std::size_t largest = 0;
  for (const auto& unit : layout.units()) largest = std::max(largest, unit.padded_numel);
  buffers_.assign(schedule_.slots(), std::vector<float>(largest, 0.0f));
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
