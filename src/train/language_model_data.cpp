// Trainers default and sft: windows of token shards (data/sampler.hpp), the mean loss of the
// targets that carry it (with loss masks, each micro-batch weighs by its share of them).
#include <algorithm>
#include <cmath>
#include <optional>

#include "autotrain/config/training_params.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/data/shard.hpp"
#include "training_data.hpp"

namespace autotrain::train {
namespace {

// Evaluation reads at most this many batches of W x B windows, from the start of the valid
// split, so an evaluation costs a bounded, predictable time on large validation sets.
constexpr long long kMaxEvalBatches = 64;

struct Datasets {
  data::TokenDataset train;
  std::optional<data::TokenDataset> valid;
};

Datasets prepare_data(const RunSetup& setup) {
  const auto& params = setup.params();
  const data::PrepareOptions options = prepare_options(setup);
  if (!params.data_path.empty() && options.data_path != params.data_path) {
    log::info("data: ", params.data_path,
              " from the Hugging Face cache: ", options.data_path.string());
  }
  const auto prepared = data::prepare_if_needed_collective(options, setup.comm);
  if (data::is_prepared_folder(options.data_path)) {
    log::info("data: the prepared shards in ", options.data_path.string());
  } else if (prepared.reused) {
    log::info("data: reusing the prepared shards in ", options.output_dir.string());
  }
  AT_CHECK(prepared.vocab_size <= params.vocab_size, "vocab_size: ", params.vocab_size,
           " is smaller than the ", params.tokenizer, " tokenizer's ", prepared.vocab_size,
           " tokens; raise vocab_size or leave it at -1");
  const auto* train_split = prepared.find(params.train_split);
  AT_CHECK(train_split != nullptr, "data: no '", params.train_split, "' split was prepared from ",
           options.data_path.string());
  Datasets datasets{data::TokenDataset(train_split->shards), std::nullopt};
  datasets.train.check_ids_below(params.vocab_size);
  if (!params.valid_split.empty() && params.eval_strategy != "no") {
    const auto* valid_split = prepared.find(params.valid_split);
    AT_CHECK(valid_split != nullptr, "valid_split: no '", params.valid_split,
             "' split was found or carved from ", options.data_path.string(), " (add a ",
             params.valid_split, ".csv/.jsonl/.txt file, or set valid_split to empty)");
    datasets.valid.emplace(valid_split->shards);
    datasets.valid->check_ids_below(params.vocab_size);
  }
  stop_here_if_asked("prepared");
  return datasets;
}

// Targets that carry loss (not kIgnoreTarget).
size_t loss_targets(std::span<const int32_t> targets) {
  return static_cast<size_t>(
      std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t != kIgnoreTarget; }));
}

class LanguageModelData final : public TrainingData {
 public:
  explicit LanguageModelData(const RunSetup& setup)
      : datasets_(prepare_data(setup)),
        B_(static_cast<int>(setup.params().batch_size)),
        T_(static_cast<int>(setup.params().block_size)),
        accumulation_(setup.params().gradient_accumulation),
        world_(setup.topology.world_size),
        sampler_(datasets_.train.num_tokens(), sampler_options(setup)),
        inputs_(static_cast<size_t>(B_) * static_cast<size_t>(T_)),
        targets_(inputs_.size()) {}

  int rows() const override { return B_; }
  data::Sampler& sampler() override { return sampler_; }
  bool has_valid() const override { return datasets_.valid.has_value(); }
  std::string describe(long long total_steps) const override {
    return cat(datasets_.train.num_tokens(), " training tokens, ", sampler_.num_windows(),
               " windows of ", T_, " tokens, ", sampler_.steps_per_epoch(), " steps per epoch of ",
               sampler_.global_batch_size(), " sequences; training for ", total_steps, " steps");
  }
  double tokens_per_step() const override {
    return double(sampler_.global_batch_size()) * double(T_);
  }

  void begin_step() override {
    step_targets_ = double(sampler_.loss_targets_in_step(datasets_.train));
  }
  MicroBatch micro_batch(long long micro, float loss_scale) override;
  DataLoss end_step(double loss_sum, Communicator& scalars) override {
    float loss = static_cast<float>(masked() ? loss_sum : loss_sum / double(accumulation_));
    scalars.allreduce(std::span<float>(&loss, 1), ReduceOp::avg);
    return {loss, {}};
  }
  DataLoss evaluate(Replica& replica, Communicator& scalars) override;

 private:
  bool masked() const { return datasets_.train.has_loss_mask(); }

  Datasets datasets_;
  const int B_;
  const int T_;
  const long long accumulation_;
  const int world_;
  data::Sampler sampler_;
  std::vector<int32_t> inputs_;
  std::vector<int32_t> targets_;
  double step_targets_ = 0;  // the step's loss-carrying targets, over all ranks
};

MicroBatch LanguageModelData::micro_batch(long long micro, float loss_scale) {
  sampler_.load_micro_batch(datasets_.train, static_cast<uint64_t>(micro), inputs_, targets_);
  MicroBatch batch{inputs_.data(), targets_.data()};
  // With loss masks a micro-batch weighs by its share of the step's loss-carrying targets
  // (times the world size: the ranks' gradients and losses are averaged); without, 1/accumulation.
  if (masked()) {
    const double weight =
        step_targets_ == 0 ? 0.0 : double(loss_targets(targets_)) * double(world_) / step_targets_;
    batch.gradient_scale = loss_scale * static_cast<float>(weight);
    batch.loss_weight = weight;
  } else {
    batch.gradient_scale = loss_scale / static_cast<float>(accumulation_);
  }
  return batch;
}

// Mean loss over the first windows of the valid split, every rank taking its rows of each
// batch. All ranks run the same number of forwards (ZeRO-3 gathers are collective).
DataLoss LanguageModelData::evaluate(Replica& replica, Communicator& comm) {
  const data::TokenDataset& valid = *datasets_.valid;
  const long long W = comm.size(), B = B_, T = T_;
  const long long windows = (static_cast<long long>(valid.num_tokens()) - 1) / T;
  AT_CHECK(windows >= 1, "valid split: ", valid.num_tokens(),
           " tokens are fewer than one window of ", T + 1,
           " tokens; provide more validation data or set eval_strategy no");
  const long long batches = std::min(kMaxEvalBatches, (windows + W * B - 1) / (W * B));
  double loss_sum = 0;
  double count = 0;
  for (long long batch = 0; batch < batches; ++batch) {
    long long valid_rows = 0;
    for (long long b = 0; b < B; ++b) {
      const long long window = batch * W * B + comm.rank() * B + b;
      const bool real = window < windows;
      valid_rows += real ? 1 : 0;
      data::load_window(
          valid, static_cast<uint64_t>(T), static_cast<uint64_t>(real ? window : 0),
          std::span<int32_t>(inputs_).subspan(static_cast<size_t>(b * T), static_cast<size_t>(T)),
          std::span<int32_t>(targets_).subspan(static_cast<size_t>(b * T), static_cast<size_t>(T)));
    }
    replica.forward(inputs_.data(), targets_.data());
    const auto losses = replica.losses();
    for (long long i = 0; i < valid_rows * T; ++i) loss_sum += losses[static_cast<size_t>(i)];
    count += double(loss_targets(
        std::span<const int32_t>(targets_).first(static_cast<size_t>(valid_rows * T))));
  }
  float totals[2] = {static_cast<float>(loss_sum), static_cast<float>(count)};
  comm.allreduce(std::span<float>(totals, 2), ReduceOp::sum);
  AT_CHECK(totals[1] > 0, "valid split: none of the ", batches * W * B,
           " windows evaluated holds a token that carries loss (train_on_completions_only: no "
           "assistant turn in them); provide validation conversations with assistant turns");
  return {double(totals[0]) / double(totals[1]), {}};
}

}  // namespace

data::SamplerOptions sampler_options(const RunSetup& setup) {
  const auto& params = setup.params();
  data::SamplerOptions options;
  options.block_size = static_cast<uint64_t>(params.block_size);
  options.batch_size = static_cast<uint64_t>(params.batch_size);
  options.gradient_accumulation = static_cast<uint64_t>(params.gradient_accumulation);
  options.world_size = static_cast<uint64_t>(setup.topology.world_size);
  options.rank = static_cast<uint64_t>(setup.topology.rank);
  options.seed = static_cast<uint64_t>(params.seed);
  return options;
}

std::unique_ptr<TrainingData> open_language_model_data(const RunSetup& setup) {
  return std::make_unique<LanguageModelData>(setup);
}

std::unique_ptr<TrainingData> open_training_data(const RunSetup& setup) {
  const std::string& trainer = setup.params().trainer;
  if (trainer == "dpo" || trainer == "orpo" || trainer == "reward") {
    return open_preference_data(setup);
  }
  return open_language_model_data(setup);
}

}  // namespace autotrain::train
