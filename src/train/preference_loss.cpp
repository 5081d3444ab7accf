#include "autotrain/train/preference_loss.hpp"

#include <algorithm>
#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"

namespace autotrain::train {
namespace {

// log σ(x), without overflow for either sign.
double log_sigmoid(double x) {
  return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
}

double sigmoid(double x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}

// A mean log-probability as orpo reads it: below 0, so that log(1 − e^a) stays finite (a
// completion whose every token has probability 1 to float precision would make it −∞).
constexpr double kLargestMeanLogp = -1e-7;

}  // namespace

PairTerm dpo_term(double beta, CompletionLogp chosen, CompletionLogp rejected, double ref_chosen,
                  double ref_rejected) {
  PairTerm term;
  term.reward_chosen = beta * (chosen.sum - ref_chosen);
  term.reward_rejected = beta * (rejected.sum - ref_rejected);
  const double z = term.reward_chosen - term.reward_rejected;
  term.loss = -log_sigmoid(z);
  // dloss/dz = −σ(−z); dz/dΣ log π(c) = β, dz/dΣ log π(r) = −β.
  term.d_chosen = -beta * sigmoid(-z);
  term.d_rejected = beta * sigmoid(-z);
  return term;
}

PairTerm orpo_term(double beta, CompletionLogp chosen, CompletionLogp rejected) {
  AT_CHECK(chosen.tokens > 0 && rejected.tokens > 0,
           "orpo: a completion without tokens has no mean log-probability");
  const double a_c = std::min(chosen.sum / double(chosen.tokens), kLargestMeanLogp);
  const double a_r = std::min(rejected.sum / double(rejected.tokens), kLargestMeanLogp);
  PairTerm term;
  // log(1 − e^a) = log(−expm1(a)), exact near a = 0.
  term.log_odds = (a_c - a_r) - (std::log(-std::expm1(a_c)) - std::log(-std::expm1(a_r)));
  term.loss = -beta * log_sigmoid(term.log_odds);
  term.reward_chosen = beta * a_c;
  term.reward_rejected = beta * a_r;
  // dloss/dlog-odds = −β·σ(−log-odds); dlog-odds/da_c = 1/(1 − e^{a_c}), /da_r = −1/(1 − e^{a_r});
  // da/dΣ log p = 1/tokens.
  const double d_odds = -beta * sigmoid(-term.log_odds);
  term.d_chosen = d_odds / -std::expm1(a_c) / double(chosen.tokens);
  term.d_rejected = -d_odds / -std::expm1(a_r) / double(rejected.tokens);
  return term;
}

PairTerm reward_term(double chosen, double rejected) {
  PairTerm term;
  term.reward_chosen = chosen;
  term.reward_rejected = rejected;
  term.loss = -log_sigmoid(chosen - rejected);
  term.d_chosen = -sigmoid(rejected - chosen);
  term.d_rejected = sigmoid(rejected - chosen);
  return term;
}

std::array<double, PreferenceSums::kCount> PreferenceSums::pack() const {
  return {pairs,   terms,  nll,         chosen_tokens, reward_chosen, reward_rejected,
          correct, margin, logp_chosen, logp_rejected, log_odds,      log_sigmoid_odds};
}

PreferenceSums PreferenceSums::unpack(const std::array<double, kCount>& v) {
  PreferenceSums s;
  s.pairs = v[0];
  s.terms = v[1];
  s.nll = v[2];
  s.chosen_tokens = v[3];
  s.reward_chosen = v[4];
  s.reward_rejected = v[5];
  s.correct = v[6];
  s.margin = v[7];
  s.logp_chosen = v[8];
  s.logp_rejected = v[9];
  s.log_odds = v[10];
  s.log_sigmoid_odds = v[11];
  return s;
}

double PreferenceSums::loss() const {
  const double mean_term = pairs > 0 ? terms / pairs : 0;
  return chosen_tokens > 0 ? mean_term + nll / chosen_tokens : mean_term;
}

std::vector<std::pair<std::string, double>> PreferenceSums::metrics(PreferenceKind kind) const {
  const double n = std::max(pairs, 1.0);
  std::vector<std::pair<std::string, double>> rows = {{"rewards/chosen", reward_chosen / n},
                                                      {"rewards/rejected", reward_rejected / n},
                                                      {"rewards/accuracies", correct / n},
                                                      {"rewards/margins", margin / n}};
  if (kind == PreferenceKind::reward) return rows;
  rows.emplace_back("logps/chosen", logp_chosen / n);
  rows.emplace_back("logps/rejected", logp_rejected / n);
  if (kind == PreferenceKind::orpo) {
    rows.emplace_back("nll_loss", chosen_tokens > 0 ? nll / chosen_tokens : 0.0);
    rows.emplace_back("log_odds_ratio", log_sigmoid_odds / n);
    rows.emplace_back("log_odds_chosen", log_odds / n);
  }
  return rows;
}

std::vector<CompletionLogp> completion_logps(std::span<const float> losses,
                                             std::span<const std::int32_t> targets, int rows,
                                             int T) {
  AT_CHECK(losses.size() == targets.size() && losses.size() == std::size_t(rows) * std::size_t(T),
           "preference: ", losses.size(), " losses and ", targets.size(), " targets for ", rows,
           " rows of ", T);
  std::vector<CompletionLogp> logps(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    for (int t = 0; t < T; ++t) {
      const std::size_t at = std::size_t(r) * std::size_t(T) + std::size_t(t);
      if (targets[at] == kIgnoreTarget) continue;
      logps[std::size_t(r)].sum -= double(losses[at]);
      ++logps[std::size_t(r)].tokens;
    }
  }
  return logps;
}

void weigh_preference_batch(PreferenceKind kind, double beta, const PreferenceBatch& batch,
                            double pair_scale, double token_scale, std::span<float> weights,
                            PreferenceSums& sums) {
  const int B = batch.pairs, T = batch.T;
  const auto logps = completion_logps(batch.losses, batch.targets, 2 * B, T);
  AT_CHECK(weights.size() == batch.losses.size(), "preference: ", weights.size(), " weights for ",
           batch.losses.size(), " positions");
  AT_CHECK(kind != PreferenceKind::dpo || batch.reference.size() == std::size_t(2 * B),
           "dpo: ", batch.reference.size(), " reference log-probabilities for ", 2 * B, " rows");
  std::fill(weights.begin(), weights.end(), 0.0f);
  // The weight of each completion position of `row`: minus d(objective)/dΣ log p (a position's
  // loss is −log p; the reward model's is its reward: plus), plus orpo's NLL on the chosen rows.
  const double sign = kind == PreferenceKind::reward ? 1.0 : -1.0;
  auto weigh_row = [&](int row, double d_logp, double nll_weight) {
    for (int t = 0; t < T; ++t) {
      const std::size_t at = std::size_t(row) * std::size_t(T) + std::size_t(t);
      if (batch.targets[at] != kIgnoreTarget) weights[at] = float(sign * d_logp + nll_weight);
    }
  };
  for (int b = 0; b < std::min(B, batch.real_pairs); ++b) {
    const CompletionLogp& chosen = logps[std::size_t(b)];
    const CompletionLogp& rejected = logps[std::size_t(B + b)];
    // The reward model's rows: Σ losses is the reward, −sum.
    const PairTerm term = kind == PreferenceKind::dpo
                              ? dpo_term(beta, chosen, rejected, batch.reference[std::size_t(b)],
                                         batch.reference[std::size_t(B + b)])
                          : kind == PreferenceKind::orpo ? orpo_term(beta, chosen, rejected)
                                                         : reward_term(-chosen.sum, -rejected.sum);
    const bool orpo = kind == PreferenceKind::orpo;
    weigh_row(b, pair_scale * term.d_chosen, orpo ? token_scale : 0.0);
    weigh_row(B + b, pair_scale * term.d_rejected, 0.0);
    sums.pairs += 1;
    sums.terms += term.loss;
    if (orpo) {
      sums.nll -= chosen.sum;
      sums.chosen_tokens += double(chosen.tokens);
      sums.log_odds += term.log_odds;
      sums.log_sigmoid_odds += log_sigmoid(term.log_odds);
    }
    sums.reward_chosen += term.reward_chosen;
    sums.reward_rejected += term.reward_rejected;
    sums.correct += term.reward_chosen > term.reward_rejected ? 1 : 0;
    sums.margin += term.reward_chosen - term.reward_rejected;
    sums.logp_chosen += orpo ? chosen.sum / double(chosen.tokens) : chosen.sum;
    sums.logp_rejected += orpo ? rejected.sum / double(rejected.tokens) : rejected.sum;
  }
}

}  // namespace autotrain::train
