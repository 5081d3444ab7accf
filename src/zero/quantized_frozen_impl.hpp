#pragma once
// BasicQuantizedFrozen's member definitions (quantized_frozen.hpp), included where it is
// instantiated for a Memory policy: quantized_frozen.cpp (the host), gpu/memory.cpp (a device).
#include <algorithm>
#include <array>
#include <vector>

#include "autotrain/core/dynamic_map.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/zero/partition.hpp"
#include "quantized_frozen.hpp"

namespace autotrain::zero {

template <typename Memory>
BasicQuantizedFrozen<Memory>::BasicQuantizedFrozen(const model::ParamLayout& layout,
                                                   model::QuantOptions options, Communicator& comm,
                                                   WaitClock& clock, int stage, int prefetch,
                                                   const model::ParamSource& source, Memory memory)
    : quantized_(layout, options, Memory::kDType),
      comm_(comm),
      memory_(std::move(memory)),
      stage_(stage) {
  const model::ParamLayout& words = quantized_.words();
  shard_offsets_ = shard_offsets(words);
  const std::size_t held = stage < 3 ? words.padded_size() : shard_offsets_.back();
  const auto elements = [](std::size_t word_count) {
    return (word_count * 4 + sizeof(F) - 1) / sizeof(F);
  };
  words_ = memory_.allocate(elements(held));
  auto* base = reinterpret_cast<std::uint32_t*>(Memory::data(words_));
  std::vector<std::uint32_t> unit_words;
  for (int u = 0; u < words.num_units(); ++u) {
    const auto& info = words.units()[static_cast<std::size_t>(u)];
    // The whole unit, or the rank's shard of it (stage 3; shard() is in flat coordinates).
    const model::Range range =
        stage < 3 ? model::Range{info.offset, info.padded_numel} : words.shard(u, comm.rank());
    const std::size_t at = stage < 3 ? info.offset : shard_offsets_[static_cast<std::size_t>(u)];
    unit_words.resize(range.size);
    quantized_.fill(u, source, range.offset - info.offset, unit_words);
    memory_.upload_bytes(base + at, unit_words.data(), range.size * 4);
  }
  std::array<float, 16 + 256> tables{};
  std::copy(kernels::kNf4Levels.begin(), kernels::kNf4Levels.end(), tables.begin());
  const auto& map = signed_dynamic_map();
  std::copy(map.begin(), map.end(), tables.begin() + 16);
  tables_ = memory_.allocate(elements(tables.size()));
  memory_.upload_bytes(Memory::data(tables_), tables.data(), sizeof tables);
  if (stage < 3) return;
  const GatherSlots plan = plan_gather_slots(words, prefetch);
  schedule_ = std::make_unique<GatherSchedule>(
      words.num_units(), words.hook_order(), prefetch, plan.large_units, clock,
      [this](std::size_t slot, int unit) { return start_gather(slot, unit); },
      memory_.consumer_stream());
  for (std::size_t s = 0; s < schedule_->slots(); ++s) {
    slots_.push_back(memory_.allocate(elements(plan.capacity(s))));
  }
}

template <typename Memory>
CommHandle BasicQuantizedFrozen<Memory>::start_gather(std::size_t slot, int unit) {
  const auto* shard = reinterpret_cast<const std::uint32_t*>(Memory::data(words_));
  const std::uint32_t* part = shard + shard_offsets_[static_cast<std::size_t>(unit)];
  auto* whole = reinterpret_cast<std::uint32_t*>(Memory::data(slots_[slot]));
  memory_.before_collective(comm_);
  return comm_.allgather_async(part, whole, quantized_.words().shard(unit, 0).size, DType::int32);
}

template <typename Memory>
const std::byte* BasicQuantizedFrozen<Memory>::payload(int unit) {
  AT_CHECK(unit >= 0 && unit < quantized_.words().num_units(), "ZeRO: frozen unit ", unit,
           " out of range");
  if (schedule_) {
    return reinterpret_cast<const std::byte*>(Memory::data(slots_[schedule_->acquire(unit)]));
  }
  const std::size_t at = quantized_.words().units()[static_cast<std::size_t>(unit)].offset;
  return reinterpret_cast<const std::byte*>(Memory::data(words_)) + at * 4;
}

template <typename Memory>
auto BasicQuantizedFrozen<Memory>::params(int unit) -> const F* {
  // Embeddings, the final norm and head: read where they are (under stage 3 the slot stays the
  // unit's until release).
  if (quantized_.raw_unit(unit)) return reinterpret_cast<const F*>(payload(unit));
  auto open = open_.find(unit);
  if (open != open_.end()) {
    open->second.users += 1;
    return Memory::data(open->second.values);
  }
  const std::size_t numel =
      quantized_.layout().units()[static_cast<std::size_t>(unit)].padded_numel;
  Open fresh;
  auto& spare = spare_[numel];
  if (spare.empty()) {
    fresh.values = memory_.allocate(numel);  // zeroed: the padding stays zero
    unit_buffer_bytes_ += Memory::bytes(fresh.values);
  } else {
    fresh.values = std::move(spare.back());
    spare.pop_back();
  }
  fresh.users = 1;
  F* into = Memory::data(fresh.values);
  const std::byte* bytes = payload(unit);
  const auto* tables = reinterpret_cast<const float*>(Memory::data(tables_));
  for (const model::QuantizedSegment& s : quantized_.segments(unit)) {
    if (s.record) {
      memory_.dequantize(*s.record, bytes + s.byte, tables, into + s.at);
    } else {
      memory_.copy_bytes(into + s.at, bytes + s.byte, s.numel);
    }
  }
  // The dequantization is queued (on a device) or done: the slot may take another unit, whose
  // gather is ordered after the work queued so far (param_gatherer.hpp).
  if (schedule_) schedule_->release(unit);
  return Memory::data(open_.emplace(unit, std::move(fresh)).first->second.values);
}

template <typename Memory>
void BasicQuantizedFrozen<Memory>::release(int unit) {
  if (quantized_.raw_unit(unit)) {
    if (schedule_) schedule_->release(unit);
    return;
  }
  const auto open = open_.find(unit);
  AT_CHECK(open != open_.end(), "internal: release(", unit, ") of a frozen unit not in use");
  if (--open->second.users > 0) return;
  const std::size_t numel =
      quantized_.layout().units()[static_cast<std::size_t>(unit)].padded_numel;
  spare_[numel].push_back(std::move(open->second.values));
  open_.erase(open);
}

template <typename Memory>
auto BasicQuantizedFrozen<Memory>::grads(int unit) -> F* {
  throw Error(cat("internal: grads(", unit, ") of a frozen unit (frozen weights have none)"));
}

template <typename Memory>
void BasicQuantizedFrozen<Memory>::begin_training_micro_step() {
  if (schedule_) schedule_->begin_training_micro_step();
}

template <typename Memory>
std::size_t BasicQuantizedFrozen<Memory>::bytes() const {
  std::size_t bytes = Memory::bytes(words_) + Memory::bytes(tables_) + unit_buffer_bytes_;
  for (const auto& slot : slots_) bytes += Memory::bytes(slot);
  return bytes;
}

}  // namespace autotrain::zero
