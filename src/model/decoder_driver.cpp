// The CPU models' driver (model/decoder_driver.hpp): the hook order, the head, the losses and the
// cache's bookkeeping around a family's parts.
#include "autotrain/model/decoder_driver.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/crossentropy.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/score.hpp"
#include "autotrain/model/hook_order.hpp"
#include "check_tokens.hpp"
#include "kernel_clock.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

template <typename F>
BasicDecoderDriver<F>::BasicDecoderDriver(const ModelConfig& config, int B, int T,
                                          Recompute recompute, const char* positions_key)
    : config_(config), B_(B), T_(T), recompute_(recompute) {
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= config_.block_size, "model: sequence length ", T, " must be in [1, ",
           positions_key, " = ", config_.block_size, "]");
  const std::size_t bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const auto Vp = static_cast<std::size_t>(config_.padded_vocab_size);
  inputs_.assign(bt, 0);
  targets_.assign(bt, 0);
  logits_.assign(bt * static_cast<std::size_t>(config_.head_outputs()), F(0));
  lse_.assign(bt, F(0));
  losses_.assign(bt, F(0));
  context_logits_.assign(Vp, F(0));
}

template <typename F>
std::pair<const F*, const F*> BasicDecoderDriver<F>::forward_to_final_norm(
    BasicUnitAccess<F>& access, Run run, const std::int32_t* tokens, int B, int T,
    const std::function<void(int)>& after_block) {
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);
  const F* normed = nullptr;
  const F* p = forward_in_hook_order(
      access, config_.n_layer, config_.head_unit(), clock,
      [&](const F* q) { embed_forward(run, q, tokens, B, T); },
      [&](int l, const F* q, BasicLinearAdapter<F>* adapter) {
        block_forward(run, l, q, adapter, B, T, clock);
        if (after_block) after_block(l);
      },
      [&](const F* q) { normed = final_norm_forward(run, q, B, T); });
  return {normed, p};
}

template <typename F>
void BasicDecoderDriver<F>::head_forward(const F* normed, const F* p, F* logits,
                                         std::size_t rows) const {
  const int C = config_.n_embd, V = config_.vocab_size, N = config_.head_outputs();
  // logits[rows, N] = normed[rows, C] · head[N, C]ᵀ (N = Vp, or the score head's 1)
  gemm<F>(Transpose::no, Transpose::yes, rows, N, C, F(1), normed, C, p + head_offset(), C, F(0),
          logits, N);
  if (config_.final_softcap > 0 && !config_.score_head) {
    logit_softcap(logits, rows, V, N, config_.final_softcap);
  }
}

template <typename F>
F BasicDecoderDriver<F>::forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                                 const std::int32_t* targets) {
  const std::size_t bt = inputs_.size();
  loss_positions_ =
      keep_batch(inputs, targets, bt, config_.vocab_size, inputs_.data(), targets_.data());
  const auto [normed, p] = forward_to_final_norm(access, Run::training, inputs_.data(), B_, T_);
  normed_ = normed;
  KernelClock clock(this->profiling_, this->profile_, Pass::forward);
  clock.restart();
  head_forward(normed, p, logits_.data(), bt);
  clock.lap(kLmHead);
  access.release(config_.head_unit());
  clock.restart();
  if (config_.score_head) {
    score_forward(losses_.data(), logits_.data(), targets_.data(), bt);
  } else {
    crossentropy_forward(losses_.data(), lse_.data(), logits_.data(), targets_.data(), bt,
                         config_.vocab_size, config_.padded_vocab_size);
  }
  clock.lap(kCrossEntropy);
  ready_for_backward_ = true;
  return static_cast<F>(mean_loss(losses_.data(), bt, loss_positions_));
}

template <typename F>
void BasicDecoderDriver<F>::head_backward(const F* p, F* g, KernelClock& clock) {
  const int C = config_.n_embd, N = config_.head_outputs();
  const std::size_t bt = inputs_.size();
  clock.restart();
  const SharedBf16Operand dlogits(logits_.data(), logits_.size());  // read by both products
  // dhead[N, C] += dlogits[BT, N]ᵀ · normed[BT, C];  dnormed[BT, C] = dlogits · head[N, C]
  if (g != nullptr) {
    gemm<F>(Transpose::yes, Transpose::no, N, C, bt, F(1), logits_.data(), N, normed_, C, F(1),
            g + head_offset(), C);
  }
  gemm<F>(Transpose::no, Transpose::no, bt, C, N, F(1), logits_.data(), N, p + head_offset(), C,
          F(0), dnormed(), C);
  clock.lap(kLmHead);
}

template <typename F>
void BasicDecoderDriver<F>::backward(BasicUnitAccess<F>& access, F loss_scale) {
  AT_CHECK(!config_.score_head, kScoreBackward);
  // d(mean loss · scale)/d(loss of one position)
  backward_rows(access, position_dloss(loss_scale, loss_positions_), nullptr);
}

template <typename F>
void BasicDecoderDriver<F>::backward_weighted(BasicUnitAccess<F>& access, F loss_scale,
                                              std::span<const F> weights) {
  AT_CHECK(weights.size() == inputs_.size(), "model: backward_weighted() needs ", inputs_.size(),
           " position weights (B·T), got ", weights.size());
  backward_rows(access, loss_scale, weights.data());
}

template <typename F>
void BasicDecoderDriver<F>::backward_rows(BasicUnitAccess<F>& access, F dloss, const F* row_scale) {
  AT_CHECK(ready_for_backward_, "model: backward() needs a forward() with targets before it");
  ready_for_backward_ = false;  // the logits buffer becomes dlogits
  KernelClock clock(this->profiling_, this->profile_, Pass::backward);
  if (config_.score_head) {
    score_backward(logits_.data(), targets_.data(), dloss, row_scale, inputs_.size());
  } else {
    crossentropy_backward(logits_.data(), logits_.data(), lse_.data(), targets_.data(), dloss,
                          inputs_.size(), config_.vocab_size, config_.padded_vocab_size,
                          config_.final_softcap, row_scale);
  }
  clock.lap(kCrossEntropy);
  backward_in_hook_order(
      access, config_.n_layer, config_.head_unit(), recompute_ != Recompute::none, clock,
      [&](const F* p, F* g) { head_backward(p, g, clock); },
      [&](const F* p, F* g) { final_norm_backward(p, g); },
      [&](int l, const F* p, BasicLinearAdapter<F>* adapter) {
        if (recompute_ == Recompute::full) {
          block_forward(Run::training, l, p, adapter, B_, T_, clock);
        } else {
          block_recompute(l, p, clock);
        }
      },
      [&](int l, const F* p, F* g, BasicLinearAdapter<F>* adapter) {
        block_backward(l, p, g, adapter, clock);
      },
      [&](F* g) { embed_backward(g); });
}

template <typename F>
std::span<const F> BasicDecoderDriver<F>::next_token_logits(BasicUnitAccess<F>& access,
                                                            std::span<const std::int32_t> tokens) {
  AT_CHECK(!config_.score_head, kScoreGeneration);
  const int n = static_cast<int>(tokens.size());
  AT_CHECK(n >= 1 && n <= config_.block_size, "generation: the context has ", tokens.size(),
           " tokens; it must hold 1 to ", config_.block_size, " (the model's positions)");
  check_tokens(tokens.data(), tokens.size(), config_.vocab_size, "tokens");
  prepare_context(n);
  const auto [normed, p] = forward_to_final_norm(access, Run::inference, tokens.data(), 1, n);
  // Only the last position's logits are needed.
  head_forward(normed + static_cast<std::size_t>(n - 1) * static_cast<std::size_t>(config_.n_embd),
               p, context_logits_.data(), 1);
  access.release(config_.head_unit());
  return {context_logits_.data(), static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
void BasicDecoderDriver<F>::reset_cache() {
  AT_CHECK(!config_.score_head, kScoreGeneration);
  cache_capacity_ = open_cache();
  cache_logits_.resize(static_cast<std::size_t>(config_.padded_vocab_size));
  cache_length_ = 0;
}

template <typename F>
std::span<const F> BasicDecoderDriver<F>::feed_token(BasicUnitAccess<F>& access,
                                                     std::int32_t token) {
  AT_CHECK(cache_capacity_ > 0, "generation: feed_token() needs reset_cache() first");
  AT_CHECK(cache_length_ < cache_capacity_, "generation: the cache holds its ", cache_capacity_,
           " tokens already; reset it and feed the last window again");
  check_tokens(&token, 1, config_.vocab_size, "token");
  const int t = cache_length_;
  NoClock clock;
  const F* normed = nullptr;
  const F* p = forward_in_hook_order(
      access, config_.n_layer, config_.head_unit(), clock,
      [&](const F* q) { embed_row(q, token, t); },
      [&](int l, const F* q, BasicLinearAdapter<F>*) { block_row(l, q, t); },
      [&](const F* q) { normed = final_norm_row(q); });
  head_forward(normed, p, cache_logits_.data(), 1);
  access.release(config_.head_unit());
  ++cache_length_;
  return {cache_logits_.data(), static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
std::span<const F> BasicDecoderDriver<F>::prefill(BasicUnitAccess<F>& access,
                                                  std::span<const std::int32_t> tokens) {
  AT_CHECK(cache_capacity_ > 0, "generation: prefill() needs reset_cache() first");
  AT_CHECK(cache_length_ == 0, "generation: prefill() fills an empty cache, and this one holds ",
           cache_length_, " tokens; reset it first");
  const int n = static_cast<int>(tokens.size());
  AT_CHECK(n >= 1 && n <= std::min(cache_capacity_, config_.block_size),
           "generation: ", tokens.size(), " tokens to prefill; the cache holds 1 to ",
           cache_capacity_);
  check_tokens(tokens.data(), tokens.size(), config_.vocab_size, "tokens");
  prepare_context(n);
  const auto [normed, p] = forward_to_final_norm(access, Run::inference, tokens.data(), 1, n,
                                                 [&](int l) { keep_context_rows(l, n); });
  head_forward(normed + static_cast<std::size_t>(n - 1) * static_cast<std::size_t>(config_.n_embd),
               p, cache_logits_.data(), 1);
  access.release(config_.head_unit());
  cache_length_ = n;
  return {cache_logits_.data(), static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
std::size_t BasicDecoderDriver<F>::activation_bytes() const {
  return family_activation_bytes() + (logits_.size() + lse_.size() + losses_.size()) * sizeof(F);
}

template class BasicDecoderDriver<float>;
template class BasicDecoderDriver<double>;

}  // namespace autotrain::model
