// The Llama-style decoder's parts of generation (llama.cpp has training's): a context's
// buffers, and incremental decoding with a key/value cache, one token at a time, through the
// same kernels as training.
#include <algorithm>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/kernels/residual.hpp"
#include "autotrain/kernels/rmsnorm.hpp"
#include "autotrain/kernels/rope.hpp"
#include "autotrain/kernels/swiglu.hpp"
#include "autotrain/model/llama.hpp"
#include "llama_activations.hpp"
#include "llama_offsets.hpp"

namespace autotrain::model {

using namespace autotrain::kernels;

template <typename F>
void BasicLlama<F>::prepare_context(int n) {
  // The activations' strides are their capacity's: a shorter context uses the front.
  if (!inference_ || inference_->bt < std::size_t(n)) {
    inference_ = std::make_unique<Activations>(config_, 1, n, Recompute::full);
  }
  ensure_rope(n);
}

template <typename F>
int BasicLlama<F>::open_cache() {
  if (!cache_) {
    cache_ = std::make_unique<Cache>(config_);
    ensure_rope(cache_->capacity);
  }
  return cache_->capacity;
}

template <typename F>
void BasicLlama<F>::embed_row(const F* p, std::int32_t token, int /*t*/) {
  embed(cache_->x.data(), &token, 1, p + offsets_->embed);
}

// One block of feed_token at position t: k.x in, k.x out.
template <typename F>
void BasicLlama<F>::block_row(int l, const F* p, int t) {
  Cache& k = *cache_;
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

// Layer l's context rows (q|k|v, normed and rotated: its one slot under `full`) into its cache.
template <typename F>
void BasicLlama<F>::keep_context_rows(int l, int n) {
  const auto row = std::size_t(config_.qkv_size());
  const Activations& a = *inference_;
  std::copy_n(a.qkv + a.slot(l) * std::size_t(n) * row, std::size_t(n) * row,
              cache_->qkv.data() + std::size_t(l) * std::size_t(cache_->capacity) * row);
}

template <typename F>
const F* BasicLlama<F>::final_norm_row(const F* p) {
  Cache& k = *cache_;
  rmsnorm_forward(k.ln.data(), k.stats.data(), k.x.data(), p + offsets_->normw, 1, 1,
                  config_.n_embd, std::size_t(config_.n_embd), config_.norm_eps, norm_offset());
  return k.ln.data();
}

// The members defined here (llama.cpp instantiates the rest).
#define AUTOTRAIN_LLAMA_GENERATE(F)                                    \
  template void BasicLlama<F>::prepare_context(int);                   \
  template int BasicLlama<F>::open_cache();                            \
  template void BasicLlama<F>::embed_row(const F*, std::int32_t, int); \
  template void BasicLlama<F>::block_row(int, const F*, int);          \
  template void BasicLlama<F>::keep_context_rows(int, int);            \
  template const F* BasicLlama<F>::final_norm_row(const F*);
AUTOTRAIN_LLAMA_GENERATE(float)
AUTOTRAIN_LLAMA_GENERATE(double)
#undef AUTOTRAIN_LLAMA_GENERATE

}  // namespace autotrain::model
