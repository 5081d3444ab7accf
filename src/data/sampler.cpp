#include "autotrain/data/sampler.hpp"

#include <limits>

#include "autotrain/core/error.hpp"
#include "autotrain/data/shard.hpp"

namespace autotrain::data {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t bound) {
  // Values in [limit, 2^64) would make some residues more likely; draw again.
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % bound;
  uint64_t value = next();
  while (value >= limit) value = next();
  return value % bound;
}

void epoch_permutation(uint64_t seed, uint64_t epoch, uint64_t num_windows,
                       std::vector<uint32_t>& order) {
  AT_CHECK(num_windows <= std::numeric_limits<uint32_t>::max(), "the dataset has ", num_windows,
           " windows; the sampler supports at most 2^32 - 1 (use a larger block_size)");
  order.resize(num_windows);
  for (uint64_t i = 0; i < num_windows; ++i) order[i] = static_cast<uint32_t>(i);
  // Seed from (seed, epoch) only; mixing the epoch through one splitmix step keeps nearby
  // (seed, epoch) pairs far apart.
  SplitMix64 epoch_mix(epoch);
  SplitMix64 random(seed ^ epoch_mix.next());
  for (uint64_t i = num_windows; i > 1; --i) {
    const uint64_t j = random.below(i);
    std::swap(order[i - 1], order[j]);
  }
}

namespace {

void check_options(const SamplerOptions& options) {
  AT_CHECK(options.batch_size > 0, "batch_size must be positive, got ", options.batch_size);
  AT_CHECK(options.gradient_accumulation > 0, "gradient_accumulation must be positive, got ",
           options.gradient_accumulation);
  AT_CHECK(options.world_size > 0 && options.rank < options.world_size, "rank ", options.rank,
           " is outside world size ", options.world_size);
}

std::string step_needs(uint64_t global_batch, std::string_view items,
                       const SamplerOptions& options) {
  return cat("one optimizer step needs ", global_batch, " ", items, " (batch_size ",
             options.batch_size, " x gradient_accumulation ", options.gradient_accumulation,
             " x world size ", options.world_size, ")");
}

}  // namespace

Sampler::Sampler(uint64_t num_tokens, const SamplerOptions& options) : options_(options) {
  AT_CHECK(options.block_size > 0, "block_size must be positive, got ", options.block_size);
  check_options(options);
  num_windows_ = num_tokens > 0 ? (num_tokens - 1) / options.block_size : 0;
  global_batch_ = options.batch_size * options.gradient_accumulation * options.world_size;
  AT_CHECK(num_windows_ >= global_batch_, "the training data has ", num_tokens,
           " tokens = ", num_windows_, " windows of block_size + 1 = ", options.block_size + 1,
           " tokens, but ", step_needs(global_batch_, "windows", options),
           "; use a smaller batch_size, gradient_accumulation or block_size, fewer ranks, or "
           "more data");
  enter_epoch(0);
}

Sampler::Sampler(Items, uint64_t num_items, const SamplerOptions& options,
                 std::string_view item_name)
    : options_(options) {
  check_options(options);
  num_windows_ = num_items;
  global_batch_ = options.batch_size * options.gradient_accumulation * options.world_size;
  AT_CHECK(num_windows_ >= global_batch_, "the training data has ", num_items, " ", item_name,
           ", but ", step_needs(global_batch_, item_name, options),
           "; use a smaller batch_size or gradient_accumulation, fewer ranks, or more data");
  enter_epoch(0);
}

Sampler Sampler::over_items(uint64_t num_items, const SamplerOptions& options,
                            std::string_view item_name) {
  return Sampler(Items{}, num_items, options, item_name);
}

void Sampler::enter_epoch(uint64_t epoch) {
  epoch_permutation(options_.seed, epoch, num_windows_, order_);
  position_ = {epoch, 0};
}

void Sampler::restore(const SamplerPosition& position) {
  if (position.epoch != position_.epoch) enter_epoch(position.epoch);
  position_ = position;
  if (num_windows_ - std::min(num_windows_, position_.sample_in_epoch) < global_batch_) {
    enter_epoch(position_.epoch + 1);
  }
}

void Sampler::advance() {
  position_.sample_in_epoch += global_batch_;
  if (num_windows_ - position_.sample_in_epoch < global_batch_) enter_epoch(position_.epoch + 1);
}

uint64_t Sampler::window(uint64_t micro_step, uint64_t row) const {
  const uint64_t p = (micro_step * options_.world_size + options_.rank) * options_.batch_size + row;
  return order_[position_.sample_in_epoch + p];
}

void Sampler::micro_batch_items(uint64_t micro_step, std::span<uint64_t> items) const {
  AT_CHECK(items.size() == options_.batch_size, "micro-batch items: ", items.size(),
           " slots for batch_size ", options_.batch_size);
  AT_CHECK(micro_step < options_.gradient_accumulation, "micro-step ", micro_step,
           " is outside gradient_accumulation ", options_.gradient_accumulation);
  for (uint64_t b = 0; b < options_.batch_size; ++b) items[b] = window(micro_step, b);
}

std::vector<uint64_t> Sampler::global_batch() const {
  std::vector<uint64_t> windows(global_batch_);
  for (uint64_t p = 0; p < global_batch_; ++p) windows[p] = order_[position_.sample_in_epoch + p];
  return windows;
}

void load_window(const TokenDataset& dataset, uint64_t block_size, uint64_t window,
                 std::span<int32_t> inputs, std::span<int32_t> targets) {
  AT_CHECK(block_size > 0 && inputs.size() == block_size && targets.size() == block_size,
           "window buffers hold ", inputs.size(), " and ", targets.size(),
           " tokens; expected block_size = ", block_size);
  // inputs and targets overlap in T - 1 tokens; copy the shared part once.
  dataset.copy(window * block_size, inputs);
  for (uint64_t t = 0; t + 1 < block_size; ++t) targets[t] = inputs[t + 1];
  dataset.copy(window * block_size + block_size, targets.subspan(block_size - 1, 1));
  dataset.mask_targets(window * block_size + 1, targets);
}

uint64_t Sampler::loss_targets_in_step(const TokenDataset& dataset) const {
  const uint64_t T = options_.block_size;
  if (!dataset.has_loss_mask()) return global_batch_ * T;
  uint64_t carrying = 0;
  for (uint64_t p = 0; p < global_batch_; ++p) {
    carrying += dataset.loss_tokens(order_[position_.sample_in_epoch + p] * T + 1, T);
  }
  return carrying;
}

void Sampler::load_micro_batch(const TokenDataset& dataset, uint64_t micro_step,
                               std::span<int32_t> inputs, std::span<int32_t> targets) const {
  const uint64_t T = options_.block_size;
  AT_CHECK(inputs.size() == options_.batch_size * T && targets.size() == inputs.size(),
           "micro-batch buffers hold ", inputs.size(), " and ", targets.size(),
           " tokens; expected batch_size x block_size = ", options_.batch_size * T);
  AT_CHECK(micro_step < options_.gradient_accumulation, "micro-step ", micro_step,
           " is outside gradient_accumulation ", options_.gradient_accumulation);
  for (uint64_t b = 0; b < options_.batch_size; ++b) {
    load_window(dataset, T, window(micro_step, b), inputs.subspan(b * T, T),
                targets.subspan(b * T, T));
  }
}

}  // namespace autotrain::data
