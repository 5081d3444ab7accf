// ZeRO stage 3 gathers on the device (device_gatherer.hpp). Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include "device_gatherer.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/zero/partition.hpp"
#include "device_gradients.hpp"

namespace autotrain::zero::gpu {

template <typename F>
DeviceParamGatherer<F>::DeviceParamGatherer(const model::ParamLayout& layout, Communicator& comm,
                                            WaitClock& clock, const F* shard, int prefetch,
                                            cudaStream_t stream)
    : layout_(layout),
      comm_(comm),
      clock_(clock),
      shard_(shard),
      stream_(stream),
      shard_offsets_(shard_offsets(layout)),
      prefetch_(prefetch) {
  AT_CHECK(prefetch >= 0, "stage3_prefetch must be >= 0, got ", prefetch);
  std::size_t largest = 0;
  for (const auto& unit : layout.units()) largest = std::max(largest, unit.padded_numel);
  // One slot for the unit in use, one per unit gathered ahead; never more than there are units.
  const int slots = std::min(prefetch + 1, layout.num_units());
  slots_.resize(static_cast<std::size_t>(slots));
  for (auto& slot : slots_) slot.buffer = kernels::gpu::DeviceBuffer(largest * sizeof(F));

  const int last = layout.num_units() - 1;  // L + 1
  for (int u = 0; u <= last; ++u) forward_sequence_.push_back(u);
  forward_sequence_.push_back(0);  // the tied LM head
  training_sequence_ = forward_sequence_;
  training_sequence_.push_back(0);  // backward: LM head, then ln_f and the blocks downwards
  for (int u = last; u >= 1; --u) training_sequence_.push_back(u);
  upcoming_.reserve(std::min(static_cast<std::size_t>(prefetch), training_sequence_.size()));
}

template <typename F>
typename DeviceParamGatherer<F>::Slot* DeviceParamGatherer<F>::find(int unit) {
  for (auto& slot : slots_) {
    if (slot.unit == unit) return &slot;
  }
  return nullptr;
}

// A slot that may be overwritten: not in use and not holding a unit in `keep`; empty slots first,
// then the least recently used.
template <typename F>
typename DeviceParamGatherer<F>::Slot* DeviceParamGatherer<F>::victim(std::span<const int> keep) {
  Slot* best = nullptr;
  for (auto& slot : slots_) {
    if (slot.in_use) continue;
    if (slot.unit >= 0 && std::find(keep.begin(), keep.end(), slot.unit) != keep.end()) continue;
    if (best == nullptr || (best->unit >= 0 && slot.unit < 0) ||
        ((best->unit >= 0) == (slot.unit >= 0) && slot.last_used < best->last_used)) {
      best = &slot;
    }
  }
  return best;
}

template <typename F>
void DeviceParamGatherer<F>::start_gather(Slot& slot, int unit) {
  // A mispredicted gather may still be writing this slot: the handle is replaced only when done.
  clock_.wait(slot.gather);
  // The slot's previous unit may still be read by kernels queued on the model's stream (release
  // comes when they are queued, not run): the gather starts after them.
  comm_.wait_for_stream(stream_);
  const std::size_t part = layout_.shard(unit, 0).size;
  slot.unit = unit;
  slot.last_used = ++clock_tick_;
  slot.gather = comm_.allgather_async(shard_ + shard_offsets_[static_cast<std::size_t>(unit)],
                                      slot.buffer.template as<F>(), part, compute_dtype<F>());
  int resident = 0;
  for (const auto& s : slots_) resident += s.unit >= 0 ? 1 : 0;
  peak_resident_ = std::max(peak_resident_, resident);
}

template <typename F>
const F* DeviceParamGatherer<F>::acquire(int unit) {
  AT_CHECK(unit >= 0 && unit < layout_.num_units(), "ZeRO-3: unit ", unit, " out of range [0, ",
           layout_.num_units(), ")");
  Slot* slot = find(unit);
  if (slot == nullptr) {
    slot = victim({});
    AT_CHECK(slot != nullptr, "ZeRO-3: params(", unit,
             ") while every gather slot is in use (a unit was not released)");
    start_gather(*slot, unit);
  }
  // The host waits, so the kernels the model queues next read the whole unit.
  clock_.wait(slot->gather);
  slot->in_use = true;
  slot->last_used = ++clock_tick_;
  advance(unit);
  prefetch_after(unit);
  return slot->buffer.template as<F>();
}

template <typename F>
void DeviceParamGatherer<F>::release(int unit) {
  Slot* slot = find(unit);
  AT_CHECK(slot != nullptr && slot->in_use, "ZeRO-3: release(", unit, ") of a unit not acquired");
  slot->in_use = false;  // the values stay: a request for the same unit reuses them
}

template <typename F>
void DeviceParamGatherer<F>::begin_training_micro_step() {
  training_ = true;
  position_ = 0;
}

// Moves the position past `unit` in the expected sequence; a request off the sequence (an
// evaluation forward) switches to the repeating forward order.
template <typename F>
void DeviceParamGatherer<F>::advance(int unit) {
  const auto& sequence = training_ ? training_sequence_ : forward_sequence_;
  if (position_ < sequence.size() && sequence[position_] == unit) {
    ++position_;
    return;
  }
  training_ = false;
  const auto at = std::find(forward_sequence_.begin(), forward_sequence_.end(), unit);
  position_ = static_cast<std::size_t>(at - forward_sequence_.begin()) + 1;
}

template <typename F>
void DeviceParamGatherer<F>::prefetch_after(int unit) {
  if (prefetch_ == 0) return;
  // The training sequence ends with the backward of unit 1; an optimizer step that changes the
  // shard follows, so nothing is gathered ahead across it.
  const auto& sequence = training_ ? training_sequence_ : forward_sequence_;
  upcoming_.clear();
  const std::size_t n = sequence.size();
  for (std::size_t k = 0; k < n && static_cast<int>(upcoming_.size()) < prefetch_; ++k) {
    std::size_t i = position_ + k;
    if (i >= n) {
      if (training_) break;
      i -= n;  // the forward order repeats
    }
    const int next = sequence[i];
    if (next == unit || std::find(upcoming_.begin(), upcoming_.end(), next) != upcoming_.end()) {
      continue;
    }
    upcoming_.push_back(next);
  }
  for (const int next : upcoming_) {
    if (find(next) != nullptr) continue;
    Slot* slot = victim(upcoming_);
    if (slot == nullptr) return;
    start_gather(*slot, next);
  }
  if (training_ && position_ >= training_sequence_.size()) {
    training_ = false;
    position_ = 0;
  }
}

template <typename F>
void DeviceParamGatherer<F>::invalidate() {
  for (auto& slot : slots_) {
    clock_.wait(slot.gather);
    slot.unit = -1;
    slot.in_use = false;
  }
}

template <typename F>
std::size_t DeviceParamGatherer<F>::bytes() const {
  std::size_t bytes = 0;
  for (const auto& slot : slots_) bytes += slot.buffer.bytes();
  return bytes;
}

template class DeviceParamGatherer<float>;
template class DeviceParamGatherer<__nv_bfloat16>;
template class DeviceParamGatherer<__half>;

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
