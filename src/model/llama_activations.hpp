#pragma once
// The activations the Llama-style decoder keeps for backward (llama.cpp), and its key/value cache
// (llama_generate.cpp). The activations are carved from one allocation; per-layer tensors are [L,
// ...] with strides of the capacity (B, T), and a shorter sequence uses the front of each slot.
// Under activation checkpointing (model/recompute.hpp; inference runs as `full`) some have one
// slot that every block overwrites, and backward recomputes a block's into it: the stream always
// keeps a slot per layer; the cheap tensors (ln1, ln2 and their rstd, the gated unit's output act)
// have one unless `none` (cheap(l)); the costly ones (the rest) have one under `full` only
// (slot(l)).
#include <cstddef>
#include <utility>
#include <vector>

#include "autotrain/model/llama.hpp"
#include "carve.hpp"

namespace autotrain::model {

template <typename F>
struct BasicLlama<F>::Activations {
  std::vector<F> storage;
  std::size_t bt = 0, lse_stride = 0;
  std::size_t C = 0, QKV = 0, Q = 0, I = 0, H = 0;  // H: q/k heads normalised per row (qk_norm)
  F* residual;     // [L + 1, BT, C]: the stream into each layer, then the last one's output
  F *ln1, *rstd1;  // [L, BT, C], [L, BT]
  F* qkv_pre;      // [L, BT, QKV] before the q/k norm (qk_norm only)
  F* qk_rstd;      // [L, BT, NH + NKV] (qk_norm only)
  F* qkv;          // [L, BT, QKV] attention's input (normed, rotated)
  F* lse;          // [L, B, NH, T] attention's log-sum-exp per row
  F* atty;         // [L, BT, Q]
  F* attn_out;     // [L, BT, C] o_proj's output (sandwich_norms only: its norm's input)
  F* rstd_attn;    // [L, BT] (sandwich_norms only)
  F* mid;          // [L, BT, C] the stream after attention
  F *ln2, *rstd2;  // [L, BT, C], [L, BT]
  F* gate_up;      // [L, BT, 2I]
  F* act;          // [L, BT, I]
  F* mlp_out;      // [L, BT, C] down_proj's output (sandwich_norms only)
  F* rstd_mlp;     // [L, BT] (sandwich_norms only)
  F *lnf, *rstdf;  // [BT, C], [BT]
  F* proj;         // [BT, C] a branch's output as it joins the stream

  Recompute mode;

  Activations(const ModelConfig& c, int B, int T, Recompute mode_) : mode(mode_) {
    const auto layers = static_cast<std::size_t>(c.n_layer);
    const std::size_t S = slots_of(Kept::cheap, mode, layers);   // slots of the cheap tensors
    const std::size_t L = slots_of(Kept::costly, mode, layers);  // of the costly ones
    const std::size_t sandwich = c.sandwich_norms ? L : 0;
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    C = std::size_t(c.n_embd), QKV = std::size_t(c.qkv_size()), Q = std::size_t(c.q_size());
    I = std::size_t(c.mlp_size());
    H = c.qk_norm ? std::size_t(c.n_head + c.kv_heads()) : 0;
    lse_stride = static_cast<std::size_t>(B) * c.n_head * static_cast<std::size_t>(T);
    std::vector<std::pair<F**, std::size_t>> parts = {{&residual, (layers + 1) * bt * C},
                                                      {&ln1, S * bt * C},
                                                      {&rstd1, S * bt},
                                                      {&qkv_pre, c.qk_norm ? L * bt * QKV : 0},
                                                      {&qk_rstd, L * bt * H},
                                                      {&qkv, L * bt * QKV},
                                                      {&lse, L * lse_stride},
                                                      {&atty, L * bt * Q},
                                                      {&attn_out, sandwich * bt * C},
                                                      {&rstd_attn, sandwich * bt},
                                                      {&mid, L * bt * C},
                                                      {&ln2, S * bt * C},
                                                      {&rstd2, S * bt},
                                                      {&gate_up, L * bt * 2 * I},
                                                      {&act, S * bt * I},
                                                      {&mlp_out, sandwich * bt * C},
                                                      {&rstd_mlp, sandwich * bt},
                                                      {&lnf, bt * C},
                                                      {&rstdf, bt},
                                                      {&proj, bt * C}};
    carve(storage, parts);
  }
  F* stream(int l) const { return residual + std::size_t(l) * bt * C; }
  // The slot of layer l's costly tensors, and of its cheap ones.
  std::size_t slot(int l) const { return slot_of(Kept::costly, mode, l); }
  std::size_t cheap(int l) const { return slot_of(Kept::cheap, mode, l); }
};

// The key/value cache of incremental generation: every layer's attention input rows (q|k|v,
// normed and rotated) of the positions fed so far, and one position of everything else.
template <typename F>
struct BasicLlama<F>::Cache {
  std::vector<F> qkv;  // [L, capacity, QKV]
  std::vector<F> x, ln, pre, atty, proj, normed, mid, gate_up, act, scratch, stats;
  int capacity = 0;

  explicit Cache(const ModelConfig& c) : capacity(c.generation_context()) {
    const auto QKV = std::size_t(c.qkv_size()), C = std::size_t(c.n_embd);
    const auto I = std::size_t(c.mlp_size());
    qkv.assign(std::size_t(c.n_layer) * std::size_t(capacity) * QKV, F(0));
    for (auto* v : {&x, &ln, &proj, &normed, &mid}) v->assign(C, F(0));
    pre.assign(QKV, F(0));
    atty.assign(std::size_t(c.q_size()), F(0));
    gate_up.assign(2 * I, F(0));
    act.assign(I, F(0));
    scratch.assign(std::size_t(capacity), F(0));
    stats.assign(std::size_t(c.n_head + c.kv_heads()), F(0));
  }
};

}  // namespace autotrain::model
