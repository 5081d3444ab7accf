// Trainers dpo and orpo: pairs of completions (data/preference.hpp), two model rows a pair, the
// pair losses of train/preference_loss.hpp; dpo's reference log-probabilities computed once.
#include <algorithm>
#include <optional>

#include "autotrain/config/training_params.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/preference.hpp"
#include "autotrain/train/preference_loss.hpp"
#include "training_data.hpp"

namespace autotrain::train {
namespace {

// Evaluation reads at most this many batches of W x B pairs from the start of the valid split.
constexpr long long kMaxEvalBatches = 64;

// One split's pairs, and (dpo) the reference's Σ log p of each completion: [2·pair] chosen,
// [2·pair + 1] rejected.
struct PairSplitData {
  data::PairSplit split;
  data::PairDataset pairs;
  std::vector<double> reference;
};

class PreferenceData final : public TrainingData {
 public:
  explicit PreferenceData(const RunSetup& setup);

  int rows() const override { return 2 * B_; }
  data::Sampler& sampler() override { return sampler_; }
  bool has_valid() const override { return valid_.has_value(); }
  std::string describe(long long total_steps) const override;
  double tokens_per_step() const override {
    return double(sampler_.global_batch_size()) * 2.0 * double(T_);
  }
  bool needs_reference() const override { return kind_ == PreferenceKind::dpo; }
  void compute_reference(Replica& replica) override;

  void begin_step() override;
  MicroBatch micro_batch(long long micro, float loss_scale) override;
  DataLoss end_step(double loss_sum, Communicator& scalars) override;
  DataLoss evaluate(Replica& replica, Communicator& scalars) override;

 private:
  // Rows of `pairs` of `split` into inputs_ and targets_ (missing pairs: the split's first,
  // weighed 0), and their reference log-probabilities into reference_rows_.
  void load(const PairSplitData& split, std::span<const std::uint64_t> pairs);
  // The reward model reads each row at its last token (transformers' last non-padding token):
  // that position alone carries a target (its value unused).
  void mark_last_tokens();
  // The pairs' sums over the ranks, as the loss and TRL's metrics.
  DataLoss reduce(const PreferenceSums& sums) const;

  const RunSetup& setup_;
  const PreferenceKind kind_;
  const double beta_;
  const int B_;
  const int T_;
  data::PreparedPairs prepared_;
  PairSplitData train_;
  std::optional<PairSplitData> valid_;
  data::Sampler sampler_;
  std::vector<std::int32_t> inputs_, targets_, lengths_;
  std::vector<double> reference_rows_;  // dpo: [2B] of the loaded rows
  PreferenceSums step_sums_;
  double step_chosen_tokens_ = 0;  // orpo: the chosen completions' tokens of the step
};

PreferenceKind preference_kind(const std::string& trainer) {
  return trainer == "orpo"     ? PreferenceKind::orpo
         : trainer == "reward" ? PreferenceKind::reward
                               : PreferenceKind::dpo;
}

data::PreparedPairs prepare_pairs(const RunSetup& setup) {
  const data::PreferenceOptions options = preference_options(setup);
  data::PreparedPairs prepared = data::prepare_pairs_if_needed_collective(options, setup.comm);
  if (prepared.reused) {
    log::info("data: reusing the prepared pairs in ", prepared.output_dir.string());
  }
  AT_CHECK(prepared.vocab_size <= setup.params().vocab_size,
           "vocab_size: ", setup.params().vocab_size, " is smaller than the ",
           setup.params().tokenizer, " tokenizer's ", prepared.vocab_size,
           " tokens; raise vocab_size or leave it at -1");
  return prepared;
}

PairSplitData open_split(const data::PreparedPairs& prepared, const std::string& name,
                         const char* key, int vocab_size) {
  const data::PairSplit* split = prepared.find(name);
  AT_CHECK(split != nullptr, key, ": no '", name, "' split of pairs was prepared from ",
           prepared.output_dir.string());
  PairSplitData data{*split, data::PairDataset(*split), {}};
  data.pairs.check_ids_below(vocab_size);
  return data;
}

PreferenceData::PreferenceData(const RunSetup& setup)
    : setup_(setup),
      kind_(preference_kind(setup.params().trainer)),
      beta_(setup.params().dpo_beta),
      B_(static_cast<int>(setup.params().batch_size)),
      T_(static_cast<int>(setup.params().block_size)),
      prepared_(prepare_pairs(setup)),
      train_(open_split(prepared_, setup.params().train_split, "train_split",
                        static_cast<int>(setup.params().vocab_size))),
      sampler_(
          data::Sampler::over_items(train_.pairs.num_pairs(), sampler_options(setup), "pairs")),
      inputs_(std::size_t(2 * B_) * std::size_t(T_)),
      targets_(inputs_.size()),
      lengths_(std::size_t(2 * B_)),
      reference_rows_(kind_ == PreferenceKind::dpo ? std::size_t(2 * B_) : 0) {
  const auto& params = setup.params();
  if (!params.valid_split.empty() && params.eval_strategy != "no") {
    valid_.emplace(open_split(prepared_, params.valid_split, "valid_split",
                              static_cast<int>(params.vocab_size)));
  }
  stop_here_if_asked("prepared");
}

std::string PreferenceData::describe(long long total_steps) const {
  const data::PairSplit& split = train_.split;
  return cat(split.pairs, " training pairs (", split.prompts_truncated, " prompts and ",
             split.completions_truncated, " completions truncated), ", sampler_.steps_per_epoch(),
             " steps per epoch of ", sampler_.global_batch_size(), " pairs (", 2 * B_, " rows of ",
             T_, " tokens per rank and micro-step); training for ", total_steps, " steps");
}

void PreferenceData::load(const PairSplitData& split, std::span<const std::uint64_t> pairs) {
  data::load_pair_rows(split.pairs, pairs, T_, inputs_, targets_, lengths_);
  if (kind_ == PreferenceKind::reward) mark_last_tokens();
  if (split.reference.empty()) return;
  for (std::size_t b = 0; b < pairs.size(); ++b) {
    reference_rows_[b] = split.reference[2 * pairs[b]];
    reference_rows_[std::size_t(B_) + b] = split.reference[2 * pairs[b] + 1];
  }
}

void PreferenceData::mark_last_tokens() {
  std::fill(targets_.begin(), targets_.end(), kIgnoreTarget);
  const std::int32_t pad = train_.pairs.pad_token();
  for (std::size_t row = 0; row < lengths_.size(); ++row) {
    const std::size_t first = row * std::size_t(T_);
    // transformers' last non-padding token: a text that ends with the pad token (EOS as pad)
    // is read before it.
    std::size_t last = first + std::size_t(lengths_[row]) - 1;
    while (last > first && inputs_[last] == pad) --last;
    targets_[last] = 0;
  }
}

void PreferenceData::compute_reference(Replica& replica) {
  const long long W = setup_.topology.world_size, r = setup_.topology.rank;
  auto compute = [&](PairSplitData& split) {
    const long long n = static_cast<long long>(split.pairs.num_pairs());
    split.reference.assign(std::size_t(2 * n), 0.0);
    std::vector<std::uint64_t> pairs(static_cast<std::size_t>(B_));
    // Every rank runs the same number of forwards (ZeRO-3 gathers are collective).
    for (long long first = 0; first < n; first += W * B_) {
      for (long long b = 0; b < B_; ++b) {
        const long long pair = first + r * B_ + b;
        pairs[std::size_t(b)] = std::uint64_t(pair < n ? pair : 0);
      }
      load(split, pairs);
      replica.forward(inputs_.data(), targets_.data());
      const auto logps = completion_logps(replica.losses(), targets_, 2 * B_, T_);
      for (long long b = 0; b < B_; ++b) {
        const long long pair = first + r * B_ + b;
        if (pair >= n) continue;
        split.reference[std::size_t(2 * pair)] = logps[std::size_t(b)].sum;
        split.reference[std::size_t(2 * pair + 1)] = logps[std::size_t(B_ + b)].sum;
      }
    }
    allreduce_or_abort(split.reference.data(), static_cast<int>(split.reference.size()), MPI_DOUBLE,
                       MPI_SUM, setup_.comm, "the reference log-probabilities");
  };
  compute(train_);
  if (valid_) compute(*valid_);
}

void PreferenceData::begin_step() {
  step_sums_ = {};
  step_chosen_tokens_ = 0;
  if (kind_ != PreferenceKind::orpo) return;
  // orpo's NLL is the mean over the step's chosen completion tokens, whichever rank holds them.
  for (const std::uint64_t pair : sampler_.global_batch()) {
    // Each completion token is a target, except the first where the prompt is empty.
    const bool prompt = train_.pairs.length(pair, data::PairPart::prompt) > 0;
    step_chosen_tokens_ +=
        double(train_.pairs.length(pair, data::PairPart::chosen)) - (prompt ? 0.0 : 1.0);
  }
}

MicroBatch PreferenceData::micro_batch(long long micro, float loss_scale) {
  std::vector<std::uint64_t> pairs(static_cast<std::size_t>(B_));
  for (int b = 0; b < B_; ++b) {
    pairs[std::size_t(b)] = sampler_.window(std::uint64_t(micro), std::uint64_t(b));
  }
  load(train_, pairs);
  MicroBatch batch{inputs_.data(), targets_.data()};
  batch.gradient_scale = loss_scale;
  batch.loss_weight = 0;  // the step's loss comes from the pairs' sums (end_step)
  const double world = double(setup_.topology.world_size);
  const double pair_scale = world / double(sampler_.global_batch_size());
  const double token_scale = step_chosen_tokens_ > 0 ? world / step_chosen_tokens_ : 0.0;
  batch.weigh = [this, pair_scale, token_scale](std::span<const float> losses,
                                                std::span<float> weights) {
    const PreferenceBatch rows{B_, T_, losses, targets_, reference_rows_, B_};
    weigh_preference_batch(kind_, beta_, rows, pair_scale, token_scale, weights, step_sums_);
    return 0.0;
  };
  return batch;
}

DataLoss PreferenceData::reduce(const PreferenceSums& sums) const {
  auto values = sums.pack();
  allreduce_or_abort(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM,
                     setup_.comm, "the preference losses");
  const PreferenceSums total = PreferenceSums::unpack(values);
  return {total.loss(), total.metrics(kind_)};
}

DataLoss PreferenceData::end_step(double /*loss_sum*/, Communicator& /*scalars*/) {
  return reduce(step_sums_);
}

DataLoss PreferenceData::evaluate(Replica& replica, Communicator& /*scalars*/) {
  const PairSplitData& valid = *valid_;
  const long long W = setup_.topology.world_size, r = setup_.topology.rank;
  const long long n = static_cast<long long>(valid.pairs.num_pairs());
  AT_CHECK(n >= 1,
           "valid split: it holds no pair; provide validation pairs or set eval_strategy no");
  const long long batches = std::min(kMaxEvalBatches, (n + W * B_ - 1) / (W * B_));
  PreferenceSums sums;
  std::vector<std::uint64_t> pairs(static_cast<std::size_t>(B_));
  std::vector<float> weights(inputs_.size());
  for (long long batch = 0; batch < batches; ++batch) {
    int real = 0;
    for (long long b = 0; b < B_; ++b) {
      const long long pair = batch * W * B_ + r * B_ + b;
      real += pair < n ? 1 : 0;
      pairs[std::size_t(b)] = std::uint64_t(pair < n ? pair : 0);
    }
    load(valid, pairs);
    replica.forward(inputs_.data(), targets_.data());
    const PreferenceBatch rows{B_, T_, replica.losses(), targets_, reference_rows_, real};
    weigh_preference_batch(kind_, beta_, rows, 0.0, 0.0, weights, sums);
  }
  return reduce(sums);
}

}  // namespace

std::unique_ptr<TrainingData> open_preference_data(const RunSetup& setup) {
  return std::make_unique<PreferenceData>(setup);
}

}  // namespace autotrain::train
