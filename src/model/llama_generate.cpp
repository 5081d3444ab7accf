// The Llama-style decoder's generation (llama.cpp has its training forward and backward): the
// next token's logits from a whole context, and incremental decoding with a key/value cache, one
// token at a time, through the same kernels.
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "autotrain/model/llama.hpp"
#include "check_tokens.hpp"
#include "llama_activations.hpp"
#include "llama_offsets.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

template <typename F>
std::span<const F> BasicLlama<F>::next_token_logits(BasicUnitAccess<F>& access,
                                                    std::span<const std::int32_t> tokens) {
  const int n = static_cast<int>(tokens.size());
  AT_CHECK(n >= 1 && n <= config_.block_size, "generation: the context has ", tokens.size(),
           " tokens; it must hold 1 to max_position_embeddings = ", config_.block_size);
  check_tokens(tokens.data(), tokens.size(), config_.vocab_size, "tokens");
  if (!inference_ || inference_->bt < std::size_t(n)) {
    inference_ = std::make_unique<Activations>(config_, 1, n, 1, true);
  }
  ensure_rope(n);
  Activations& a = *inference_;
  // The activations' strides are their capacity's: a shorter context uses the front.
  AT_CHECK(a.bt >= std::size_t(n), "internal: inference buffers too small");
  const F* p = forward_to_final_norm(access, a, tokens.data(), 1, n);
  head_forward(a.lnf + static_cast<std::size_t>(n - 1) * config_.n_embd, p, a.logits, 1);
  access.release(head_unit());
  return {a.logits, static_cast<std::size_t>(config_.vocab_size)};
}

template <typename F>
void BasicLlama<F>::reset_cache() {
  if (!cache_) {
    cache_ = std::make_unique<Cache>(config_);
    ensure_rope(cache_->capacity);
  }
  cache_->length = 0;
}

template <typename F>
int BasicLlama<F>::cached_tokens() const {
  return cache_ ? cache_->length : 0;
}

// One block of feed_token at position t: k.x in, k.x out.
template <typename F>
void BasicLlama<F>::block_step(Cache& k, int l, const F* p, int t) {
  const ModelConfig& c = config_;
  const int C = c.n_embd, NH = c.n_head, NKV = c.kv_heads(), D = c.head_size(), R = c.rotary_size();
  const int Q = c.q_size(), QKV = c.qkv_size(), I = c.mlp_size();
  const auto uC = std::size_t(C), uQKV = std::size_t(QKV);
  const double eps = c.norm_eps, w0 = norm_offset();
  const LlamaOffsets& o = *offsets_;
  F* stats = k.stats.data();
  F* rows = k.qkv.data() + std::size_t(l) * std::size_t(k.capacity) * uQKV;
  F* row = rows + std::size_t(t) * uQKV;
  // out = from + the branch's projection of `in` (through its sandwich norm, if any).
  const auto join = [&](F* out, const F* from, std::size_t weight, std::size_t bias, const F* in,
                        int IC, std::size_t norm) {
    linear_forward(k.proj.data(), in, p + weight, tensor_at(p, bias), 1, IC, C);
    const F* y = k.proj.data();
    if (c.sandwich_norms) {
      rmsnorm_forward(k.normed.data(), stats, y, p + norm, 1, 1, C, uC, eps, w0);
      y = k.normed.data();
    }
    residual_forward(out, from, y, uC);
  };
  rmsnorm_forward(k.ln.data(), stats, k.x.data(), p + o.ln1w, 1, 1, C, uC, eps, w0);
  if (c.qk_norm) {
    linear_forward(k.pre.data(), k.ln.data(), p + o.qkvw, tensor_at(p, o.qkvb), 1, C, QKV);
    std::memcpy(row, k.pre.data(), uQKV * sizeof(F));
    rmsnorm_forward(row, stats, k.pre.data(), p + o.qnorm, 1, NH, D, uQKV, eps, w0);
    rmsnorm_forward(row + Q, stats + NH, k.pre.data() + Q, p + o.knorm, 1, NKV, D, uQKV, eps, w0);
  } else {
    linear_forward(row, k.ln.data(), p + o.qkvw, tensor_at(p, o.qkvb), 1, C, QKV);
  }
  const auto [cos, sin] = rope_tables(l);
  rope_forward(row, cos, sin, 1, 1, NH, D, R, uQKV, t);
  rope_forward(row + Q, cos, sin, 1, 1, NKV, D, R, uQKV, t);
  attention_forward_last(k.atty.data(), k.scratch.data(), rows, t + 1, NH, NKV, D,
                         attention_options(l));
  join(k.mid.data(), k.x.data(), o.ow, o.ob, k.atty.data(), Q, o.attn_post);
  rmsnorm_forward(k.ln.data(), stats, k.mid.data(), p + o.ln2w, 1, 1, C, uC, eps, w0);
  linear_forward(k.gate_up.data(), k.ln.data(), p + o.guw, tensor_at(p, o.gub), 1, C, 2 * I);
  gated_forward(c.gate, k.act.data(), k.gate_up.data(), 1, I);
  join(k.x.data(), k.mid.data(), o.downw, o.downb, k.act.data(), I, o.mlp_post);
}

template <typename F>
std::span<const F> BasicLlama<F>::feed_token(BasicUnitAccess<F>& access, std::int32_t token) {
  AT_CHECK(cache_ != nullptr, "generation: feed_token() needs reset_cache() first");
  Cache& k = *cache_;
  AT_CHECK(k.length < k.capacity, "generation: the cache holds ", k.capacity,
           " tokens already; reset it and feed the last window again");
  check_tokens(&token, 1, config_.vocab_size, "token");
  const ModelConfig& c = config_;
  const int L = c.n_layer;
  const F* p = access.params(0);
  embed(k.x.data(), &token, 1, p + offsets_->embed);
  access.release(0);
  for (int l = 0; l < L; ++l) {
    p = access.params(ParamLayout::block_unit(l));
    block_step(k, l, p, k.length);
    access.release(ParamLayout::block_unit(l));
  }
  p = access.params(L + 1);
  rmsnorm_forward(k.ln.data(), k.stats.data(), k.x.data(), p + offsets_->normw, 1, 1, c.n_embd,
                  std::size_t(c.n_embd), c.norm_eps, norm_offset());
  if (head_unit() == 0) {
    access.release(L + 1);
    p = access.params(0);
  }
  head_forward(k.ln.data(), p, k.logits.data(), 1);
  access.release(head_unit());
  ++k.length;
  return {k.logits.data(), static_cast<std::size_t>(c.vocab_size)};
}

// The members defined here (llama.cpp instantiates the rest).
#define AUTOTRAIN_LLAMA_GENERATE(F)                                                            \
  template std::span<const F> BasicLlama<F>::next_token_logits(BasicUnitAccess<F>&,            \
                                                               std::span<const std::int32_t>); \
  template void BasicLlama<F>::reset_cache();                                                  \
  template int BasicLlama<F>::cached_tokens() const;                                           \
  template void BasicLlama<F>::block_step(Cache&, int, const F*, int);                         \
  template std::span<const F> BasicLlama<F>::feed_token(BasicUnitAccess<F>&, std::int32_t);
AUTOTRAIN_LLAMA_GENERATE(float)
AUTOTRAIN_LLAMA_GENERATE(double)
#undef AUTOTRAIN_LLAMA_GENERATE

}  // namespace autotrain::model
