#pragma once
// The training order (DESIGN.md contract 2: the data order does not depend on the world size).
//
// Windows: a dataset of `tokens` tokens is cut into N = floor((tokens - 1) / T) windows, T =
// block_size; window w is tokens [w*T, w*T + T + 1): inputs are its first T tokens, targets
// the last T (shifted by one). Inputs of different windows do not overlap.
//
// Order: each epoch e visits the windows in one permutation determined only by (seed, e)
// (splitmix64 + Fisher-Yates, identical on every machine). Optimizer step s of the epoch takes
// the next G = batch_size * gradient_accumulation * world_size windows of the permutation: its
// global batch. When fewer than G windows are left in the epoch, they are skipped and the next
// epoch starts (so every step sees exactly G fresh windows).
//
// Layout of a global batch (position p in [0, G)): micro-step m, rank r, row b take
//     p = (m * world_size + r) * batch_size + b.
// Micro-step m of all ranks together covers positions [m*W*B, (m+1)*W*B), so the set a step
// sees is the same for any world size with the same G: 1 rank x accumulation 4 and 4 ranks x
// accumulation 1 average the loss over the same G windows.
//
// Loss masks (completion-only loss): a target whose token carries no loss in the dataset's mask
// is loaded as kIgnoreTarget. A step's loss is the mean over the loss-carrying targets of its
// whole global batch, so each micro-batch weighs by its share of them
// (loss_targets_in_step), again the same for any world size with the same G.
//
// Items: over_items() orders N items (preference pairs) instead of windows, with the same
// permutations, global batches and positions; block_size is not used, and a global batch of G
// items gives each rank whole items.
//
// Position: (epoch, sample_in_epoch), both saved in checkpoints. Restoring it with another
// world size is exact as long as G is unchanged.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace autotrain::data {

class TokenDataset;

struct SamplerOptions {
  uint64_t block_size = 0;  // T
  uint64_t batch_size = 0;  // B, per rank and micro-step
  uint64_t gradient_accumulation = 1;
  uint64_t world_size = 1;
  uint64_t rank = 0;
  uint64_t seed = 42;
};

struct SamplerPosition {
  uint64_t epoch = 0;
  uint64_t sample_in_epoch = 0;  // windows of this epoch's permutation already consumed
  bool operator==(const SamplerPosition&) const = default;
};

// splitmix64 (Steele, Lea, Flood 2014): small, fast, and the same everywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, bound), bound > 0 (rejection sampling: no modulo bias).
  uint64_t below(uint64_t bound);

 private:
  uint64_t state_;
};

// The permutation of [0, num_windows) used in epoch `epoch` (written into `order`).
void epoch_permutation(uint64_t seed, uint64_t epoch, uint64_t num_windows,
                       std::vector<uint32_t>& order);

class Sampler {
 public:
  // Throws Error when the dataset has fewer windows than one global batch (saying how many it
  // has, how many a step needs, and what to change), or options are invalid.
  Sampler(uint64_t num_tokens, const SamplerOptions& options);
  // The order of `num_items` items (`item_name`: "preference pairs", for the error when the
  // split has fewer than G).
  static Sampler over_items(uint64_t num_items, const SamplerOptions& options,
                            std::string_view item_name);

  uint64_t num_windows() const { return num_windows_; }
  uint64_t global_batch_size() const { return global_batch_; }  // G
  uint64_t steps_per_epoch() const { return num_windows_ / global_batch_; }

  SamplerPosition position() const { return position_; }
  // Continues from a saved position (e.g. after resume); a position whose epoch has fewer than
  // G windows left moves on to the next epoch, as advance() would have.
  void restore(const SamplerPosition& position);
  // Moves past the current step's global batch.
  void advance();

  // Window index for (micro_step, row) of this rank in the current step.
  uint64_t window(uint64_t micro_step, uint64_t row) const;
  // This rank's B items (windows) of micro-step `micro_step` in the current step, in row order.
  // Allocates nothing.
  void micro_batch_items(uint64_t micro_step, std::span<uint64_t> items) const;
  // The current step's G windows in position order (p = (m * W + r) * B + b).
  std::vector<uint64_t> global_batch() const;
  // Fills this rank's micro-batch [B, T] of the current step: inputs and targets (each of
  // B * T tokens; targets masked as the dataset says). Allocates nothing.
  void load_micro_batch(const TokenDataset& dataset, uint64_t micro_step, std::span<int32_t> inputs,
                        std::span<int32_t> targets) const;
  // The loss-carrying targets of the current step's whole global batch (G · T without masks).
  uint64_t loss_targets_in_step(const TokenDataset& dataset) const;

 private:
  struct Items {};
  Sampler(Items, uint64_t num_items, const SamplerOptions& options, std::string_view item_name);
  void enter_epoch(uint64_t epoch);

  SamplerOptions options_;
  uint64_t num_windows_ = 0;
  uint64_t global_batch_ = 0;
  SamplerPosition position_;
  std::vector<uint32_t> order_;  // this epoch's permutation of window indices
};

// Loads window `window` (T + 1 tokens) as inputs [T] and targets [T], targets masked as the
// dataset says (evaluation reads the windows of the valid split in order with this).
void load_window(const TokenDataset& dataset, uint64_t block_size, uint64_t window,
                 std::span<int32_t> inputs, std::span<int32_t> targets);

}  // namespace autotrain::data
