#pragma once
// The preference objectives of trainers dpo and orpo, as TRL defines them (docs/training.md,
// "Preference tuning"), written as functions of each completion's log-probability under the
// policy, Σ log p over its tokens: the models give per-position losses (-log p of each target), so
// a pair's loss and its derivative by each completion's log-probability are all that backward
// needs (model::CausalLM::backward_weighted: the weight of a completion position is minus that
// derivative).
//
// dpo (loss_type sigmoid): with z = β·((log π(c) − log π_ref(c)) − (log π(r) − log π_ref(r))),
//   loss = −log σ(z), rewards β·(log π − log π_ref) of each completion.
// orpo: with a = the completion's MEAN log-probability per token,
//   log-odds = (a_c − a_r) − (log(1 − e^{a_c}) − log(1 − e^{a_r})),
//   loss = NLL(chosen) − β·log σ(log-odds), rewards β·a, the NLL the mean over the chosen
//   completions' tokens of the step.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace autotrain::train {

// reward (TRL's RewardTrainer): the model is a reward model (a score head, ModelConfig::score_head)
// whose per-position "losses" are its scores at each row's last token, r; loss −log σ(r_c − r_r).
enum class PreferenceKind { dpo, orpo, reward };

// A completion under the policy: Σ log p over its tokens, and how many there are.
struct CompletionLogp {
  double sum = 0;
  long long tokens = 0;
};

// One pair's term of the objective (dpo: its whole loss; orpo: −β·log σ(log-odds), the NLL is
// apart) and the term's derivatives by the completions' summed log-probabilities.
struct PairTerm {
  double loss = 0;
  double d_chosen = 0, d_rejected = 0;
  double reward_chosen = 0, reward_rejected = 0;
  double log_odds = 0;  // orpo's
};

// ref_chosen, ref_rejected: the reference model's Σ log p of the same completions.
PairTerm dpo_term(double beta, CompletionLogp chosen, CompletionLogp rejected, double ref_chosen,
                  double ref_rejected);
PairTerm orpo_term(double beta, CompletionLogp chosen, CompletionLogp rejected);
// The reward model's term from the two rewards; its derivatives are by the rewards.
PairTerm reward_term(double chosen, double rejected);

// What a step's pairs add up to on one rank, summed (the means TRL logs are sums over pairs
// divided by the pairs; the ranks' sums are added first).
struct PreferenceSums {
  double pairs = 0;
  double terms = 0;          // Σ pair terms
  double nll = 0;            // orpo: Σ −log p over the chosen completions' tokens
  double chosen_tokens = 0;  // orpo: their count
  double reward_chosen = 0, reward_rejected = 0, correct = 0, margin = 0;
  double logp_chosen = 0, logp_rejected = 0;  // dpo: Σ log p; orpo: the mean per token
  double log_odds = 0, log_sigmoid_odds = 0;  // orpo
  // In one array, to add up over the ranks.
  static constexpr std::size_t kCount = 12;
  std::array<double, kCount> pack() const;
  static PreferenceSums unpack(const std::array<double, kCount>& values);
  // The step's loss: the mean term, plus orpo's NLL mean.
  double loss() const;
  // TRL's names and means: rewards/chosen, rewards/rejected, rewards/accuracies, rewards/margins,
  // logps/chosen, logps/rejected; orpo adds nll_loss, log_odds_ratio and log_odds_chosen.
  std::vector<std::pair<std::string, double>> metrics(PreferenceKind kind) const;
};

// One micro-batch of B pairs in rows [2B, T] (row b: prompt + chosen of pair b, row B + b: prompt +
// rejected) from its forward: `losses` and `targets` [2B, T] (only completion targets carry loss;
// reward: only each row's last token, its loss the row's reward),
// `reference` [2B] the reference's Σ log p of each row (dpo; empty for orpo). Fills `weights`
// [2B, T] with d(this rank's share of the objective)/d(each position's loss): a pair's term weighs
// `pair_scale` (world size / pairs in the step: the ranks' gradients are averaged), an orpo chosen
// token's NLL `token_scale` (world size / chosen completion tokens in the step); adds the pairs'
// terms to `sums`. Pairs at or after `real_pairs` (padding of an evaluation batch) add nothing.
struct PreferenceBatch {
  int pairs = 0;  // B
  int T = 0;
  std::span<const float> losses;
  std::span<const std::int32_t> targets;
  std::span<const double> reference;
  int real_pairs = 0;
};
void weigh_preference_batch(PreferenceKind kind, double beta, const PreferenceBatch& batch,
                            double pair_scale, double token_scale, std::span<float> weights,
                            PreferenceSums& sums);

// The rows' Σ log p of the completion targets (−Σ losses where the target carries loss).
std::vector<CompletionLogp> completion_logps(std::span<const float> losses,
                                             std::span<const std::int32_t> targets, int rows,
                                             int T);

}  // namespace autotrain::train
