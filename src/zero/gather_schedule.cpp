#include "gather_schedule.hpp"

#include <algorithm>
#include <utility>

#include "autotrain/core/error.hpp"

namespace autotrain::zero {

std::size_t GatherSlots::total() const {
  std::size_t sum = 0;
  for (std::size_t s = 0; s < count; ++s) sum += capacity(s);
  return sum;
}

GatherSlots plan_gather_slots(const model::ParamLayout& layout, int prefetch) {
  const auto& units = layout.units();
  const auto units_count = static_cast<int>(units.size());
  const int layers = layout.config().n_layer;
  std::size_t largest_block = 0;
  for (int l = 0; l < layers; ++l) {
    largest_block =
        std::max(largest_block,
                 units[static_cast<std::size_t>(model::ParamLayout::block_unit(l))].padded_numel);
  }
  // The embeddings, and the units after the blocks that are larger than every block.
  std::vector<int> large{0};
  for (int u = layers + 1; u < units_count; ++u) {
    if (units[static_cast<std::size_t>(u)].padded_numel > largest_block) large.push_back(u);
  }
  std::size_t largest_large = 0;
  std::size_t largest_other = 0;
  for (int u = 0; u < units_count; ++u) {
    const bool is_large = std::find(large.begin(), large.end(), u) != large.end();
    std::size_t& largest = is_large ? largest_large : largest_other;
    largest = std::max(largest, units[static_cast<std::size_t>(u)].padded_numel);
  }
  GatherSlots shared{{},
                     static_cast<std::size_t>(std::min(prefetch + 1, units_count)),
                     0,
                     std::max(largest_large, largest_other)};
  const int others = units_count - static_cast<int>(large.size());
  if (others < 1) return shared;
  GatherSlots own{large, 1 + static_cast<std::size_t>(std::min(prefetch + 1, others)),
                  largest_large, largest_other};
  return own.total() < shared.total() ? own : shared;
}

GatherSchedule::GatherSchedule(int num_units, const model::HookOrder& order, int prefetch,
                               const std::vector<int>& large_units, WaitClock& clock,
                               StartGather start_gather, void* consumer_stream)
    : num_units_(num_units),
      prefetch_(prefetch),
      clock_(clock),
      start_gather_(std::move(start_gather)),
      consumer_stream_(consumer_stream) {
  AT_CHECK(prefetch >= 0, "stage3_prefetch must be >= 0, got ", prefetch);
  const int others = num_units - static_cast<int>(large_units.size());
  if (!large_units.empty() && others >= 1) {
    large_.assign(static_cast<std::size_t>(num_units), false);
    for (const int unit : large_units) {
      AT_CHECK(unit >= 0 && unit < num_units, "internal: large unit ", unit, " of ", num_units);
      large_[static_cast<std::size_t>(unit)] = true;
    }
    slots_.resize(1 + static_cast<std::size_t>(std::min(prefetch + 1, others)));
  } else {
    slots_.resize(static_cast<std::size_t>(std::min(prefetch + 1, num_units)));
  }
  forward_sequence_ = order.inference;
  training_sequence_ = order.training;
  for (const auto* sequence : {&forward_sequence_, &training_sequence_}) {
    for (const int unit : *sequence) {
      AT_CHECK(unit >= 0 && unit < num_units, "internal: the hook order names unit ", unit, " of ",
               num_units);
    }
  }
  upcoming_.reserve(std::min(static_cast<std::size_t>(prefetch), training_sequence_.size()));
}

GatherSchedule::Slot* GatherSchedule::find(int unit) {
  for (auto& slot : slots_) {
    if (slot.unit == unit) return &slot;
  }
  return nullptr;
}

// A slot that may be overwritten with `unit`: one it may hold (slot 0 is the large units' own,
// when they have one), not in use and not holding a unit in `keep`; empty slots first, then the
// least recently used.
GatherSchedule::Slot* GatherSchedule::victim(std::span<const int> keep, int unit) {
  Slot* best = nullptr;
  const bool large = !large_.empty() && large_[static_cast<std::size_t>(unit)];
  for (auto& slot : slots_) {
    if (!large_.empty() && ((&slot == slots_.data()) != large)) continue;
    if (slot.in_use) continue;
    if (slot.unit >= 0 && std::find(keep.begin(), keep.end(), slot.unit) != keep.end()) continue;
    if (best == nullptr || (best->unit >= 0 && slot.unit < 0) ||
        ((best->unit >= 0) == (slot.unit >= 0) && slot.last_used < best->last_used)) {
      best = &slot;
    }
  }
  return best;
}

void GatherSchedule::start_gather(Slot& slot, int unit) {
  // A mispredicted gather may still be writing this slot: the handle is replaced only when done.
  clock_.wait(slot.gather);
  slot.unit = unit;
  slot.last_used = ++clock_tick_;
  slot.gather = start_gather_(static_cast<std::size_t>(&slot - slots_.data()), unit);
  int resident = 0;
  for (const auto& s : slots_) resident += s.unit >= 0 ? 1 : 0;
  peak_resident_ = std::max(peak_resident_, resident);
}

std::size_t GatherSchedule::acquire(int unit) {
  AT_CHECK(unit >= 0 && unit < num_units_, "ZeRO-3: unit ", unit, " out of range [0, ", num_units_,
           ")");
  Slot* slot = find(unit);
  if (slot == nullptr) {
    slot = victim({}, unit);
    AT_CHECK(slot != nullptr, "ZeRO-3: params(", unit,
             ") while every gather slot is in use (a unit was not released)");
    start_gather(*slot, unit);
  }
  if (consumer_stream_ != nullptr) {
    slot->gather.order_before(consumer_stream_);
  } else {
    clock_.wait(slot->gather);
  }
  slot->in_use = true;
  slot->last_used = ++clock_tick_;
  advance(unit);
  prefetch_after(unit);
  return static_cast<std::size_t>(slot - slots_.data());
}

void GatherSchedule::release(int unit) {
  Slot* slot = find(unit);
  AT_CHECK(slot != nullptr && slot->in_use, "ZeRO-3: release(", unit, ") of a unit not acquired");
  slot->in_use = false;  // the values stay: a request for the same unit reuses them
}

void GatherSchedule::begin_training_micro_step() {
  training_ = true;
  position_ = 0;
}

// Moves the position past `unit` in the expected sequence; a request off the sequence (an
// evaluation forward, a generation) switches to the repeating forward order.
void GatherSchedule::advance(int unit) {
  const auto& sequence = training_ ? training_sequence_ : forward_sequence_;
  if (position_ < sequence.size() && sequence[position_] == unit) {
    ++position_;
    return;
  }
  training_ = false;
  const auto at = std::find(forward_sequence_.begin(), forward_sequence_.end(), unit);
  position_ = static_cast<std::size_t>(at - forward_sequence_.begin()) + 1;
}

void GatherSchedule::prefetch_after(int unit) {
  if (prefetch_ == 0) return;
  // Nothing is gathered past the end of a sequence: a training micro-step is followed by an
  // optimizer step that changes the shard, and a forward-only pass (an evaluation) may be
  // followed by a save or a step, so a gather started then would be in flight with nothing
  // waiting on it. The next pass's first unit is gathered when it is requested.
  const auto& sequence = training_ ? training_sequence_ : forward_sequence_;
  upcoming_.clear();
  const std::size_t n = sequence.size();
  for (std::size_t i = position_; i < n && static_cast<int>(upcoming_.size()) < prefetch_; ++i) {
    const int next = sequence[i];
    if (next == unit || std::find(upcoming_.begin(), upcoming_.end(), next) != upcoming_.end()) {
      continue;
    }
    upcoming_.push_back(next);
  }
  for (const int next : upcoming_) {
    if (find(next) != nullptr) continue;
    Slot* slot = victim(upcoming_, next);
    if (slot == nullptr) return;
    start_gather(*slot, next);
  }
  if (training_ && position_ >= training_sequence_.size()) {
    training_ = false;
    position_ = 0;
  }
}

void GatherSchedule::invalidate() {
  for (auto& slot : slots_) {
    clock_.wait(slot.gather);
    slot.unit = -1;
    slot.in_use = false;
  }
}

}  // namespace autotrain::zero
