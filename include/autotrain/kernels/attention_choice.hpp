#pragma once
// Which attention a device model runs, decided on the host and testable without a GPU: the
// value of AUTOTRAIN_CUDA_ATTENTION, the choice between cuDNN's fused attention, our flash
// kernels and the unfused path (attention_forward/backward: fast or reference), and the shape of
// one fused attention call, the cuDNN plan cache's key, with the dims and element strides that
// read Q, K, V from the fused qkv buffer and write dQ, dK, dV into dqkv in place.
//
// Shapes (attention.hpp's): qkv and dqkv [B, T, (NH + 2·NKV)·HS], out and dout [B, T, NH·HS],
// the row statistics [B, NH, T] fp32. cuDNN names every tensor [batch, heads, sequence, head
// dim] with element strides; W = (NH + 2·NKV)·HS is one qkv row.
// C++17: nvcc compiles the .cu files that include this.
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/attention.hpp"  // AttentionOptions

namespace autotrain::kernels {

// AUTOTRAIN_CUDNN_DETERMINISTIC (null: unset): whether cuDNN's attention backward must give the
// same bits on every run: unset, empty, "1" or "true" (the default), "0" or "false"; Error naming
// the value otherwise.
bool parse_cudnn_deterministic(const char* value);

// AUTOTRAIN_CUDA_ATTENTION: automatic (unset, empty or "auto"), or the path asked for.
enum class AttentionKind { automatic, fast, reference, flash, cudnn };

// The kind `value` names (null: unset); Error naming the value and the choices otherwise.
AttentionKind parse_attention_kind(const char* value);

// The paths a device model runs: cuDNN's fused attention, our flash kernels, or the unfused
// attention_forward/backward (the cuBLAS fast path, or the reference kernels where asked for).
enum class AttentionPath { cudnn, flash, unfused };

struct AttentionChoice {
  AttentionPath path = AttentionPath::unfused;
  std::string why;  // for the log line: why this path, or why not a faster one
};

// The path for a model: `flash_applies` where our flash kernels take its precision, heads and
// head size (flash_attention_supports; they take every AttentionOptions); `cudnn_refusal` is empty
// where cuDNN's plans built for every layer's shape, else why not (cudnn_attention_prepare).
// Automatic takes flash, then the fast path: cuDNN's fused attention stays opt-in (`cudnn`) until a
// GPU has checked it (docs/gpu.md); a kind asked for runs where it applies and falls back to flash,
// then the unfused path, otherwise; fast and reference never run a fused path.
AttentionChoice choose_attention(AttentionKind kind, bool flash_applies,
                                 const std::string& cudnn_refusal);

// Whether cuDNN is worth trying (building its plans) for this kind.
inline bool attention_tries_cudnn(AttentionKind kind) {
  return kind == AttentionKind::cudnn;
}

// One fused attention call: the plan cache's key. scale is resolved (options.scale_for(HS)).
struct SdpaShape {
  int B = 0, T = 0, NH = 0, NKV = 0, HS = 0;
  bool bf16 = true;  // else fp16
  float scale = 0;
  float softcap = 0;  // 0: none
  int window = 0;     // 0: plain causal
  // cuDNN's backward: deterministic (dQ from a dP workspace [B, NH, T, T] in F, the same bits on
  // every run) or with dQ accumulated by atomics in fp32 (AUTOTRAIN_CUDNN_DETERMINISTIC=0).
  bool deterministic = true;
  bool operator==(const SdpaShape& other) const;
  bool operator<(const SdpaShape& other) const;
  // "bf16 B=16 T=1024 NH=12 NKV=12 HS=64 causal" (and the options that are set).
  std::string describe() const;
};

SdpaShape sdpa_shape(bool bf16, int B, int T, int NH, int NKV, int HS,
                     const AttentionOptions& options);

// Why cuDNN cannot take this shape before asking it ("" where it may): positive sizes, whole
// groups of query heads, head sizes that are multiples of 8 up to 256 (16-byte aligned rows).
std::string sdpa_shape_refusal(const SdpaShape& s);

// A tensor inside one of our buffers: cuDNN's [batch, heads, sequence, head dim] dims, their
// element strides, and the element offset of [0, 0, 0, 0] from the buffer's start.
struct SdpaLayout {
  std::array<std::int64_t, 4> dims{};
  std::array<std::int64_t, 4> strides{};
  std::int64_t offset = 0;
};

// q, k, v in qkv (and dq, dk, dv in dqkv): [B, NH or NKV, T, HS], strides [T·W, HS, W, 1],
// offsets 0, NH·HS and (NH + NKV)·HS.
SdpaLayout sdpa_q_layout(const SdpaShape& s);
SdpaLayout sdpa_k_layout(const SdpaShape& s);
SdpaLayout sdpa_v_layout(const SdpaShape& s);
// out and dout [B, T, NH·HS] as [B, NH, T, HS]: strides [T·NH·HS, HS, NH·HS, 1].
SdpaLayout sdpa_o_layout(const SdpaShape& s);
// The row statistics [B, NH, T] as [B, NH, T, 1]: strides [NH·T, T, 1, 1].
SdpaLayout sdpa_stats_layout(const SdpaShape& s);
// The same memory with the last two dims swapped (K as Kᵀ [B, NKV, HS, T]).
SdpaLayout sdpa_transposed(const SdpaLayout& layout);

// Inline: the CUDA kernels (attention.cu, cudnn_attention.cu) call these, and their libraries
// link before this layer's host objects.

inline bool parse_cudnn_deterministic(const char* value) {
  const std::string choice = value == nullptr ? "" : value;
  if (choice.empty() || choice == "1" || choice == "true") return true;
  if (choice == "0" || choice == "false") return false;
  throw Error(cat("AUTOTRAIN_CUDNN_DETERMINISTIC = '", choice,
                  "': expected '1' or 'true' (cuDNN's attention backward gives the same bits on "
                  "every run; also when unset) or '0' or 'false' (dQ accumulated by atomics)"));
}

inline AttentionKind parse_attention_kind(const char* value) {
  const std::string choice = value == nullptr ? "" : value;
  if (choice.empty() || choice == "auto") return AttentionKind::automatic;
  if (choice == "fast") return AttentionKind::fast;
  if (choice == "reference") return AttentionKind::reference;
  if (choice == "flash") return AttentionKind::flash;
  if (choice == "cudnn") return AttentionKind::cudnn;
  throw Error(cat("AUTOTRAIN_CUDA_ATTENTION = '", choice,
                  "': expected 'auto' (cuDNN's fused attention where it builds, else flash "
                  "attention where it applies, else the fast path; also when unset), 'cudnn' "
                  "(cuDNN's fused attention), 'flash' (our flash attention in bf16/fp16), 'fast' "
                  "(the cuBLAS path) or 'reference' (the slow reference kernels)"));
}

inline bool SdpaShape::operator==(const SdpaShape& other) const {
  return !(*this < other) && !(other < *this);
}

inline bool SdpaShape::operator<(const SdpaShape& other) const {
  return std::tie(B, T, NH, NKV, HS, bf16, scale, softcap, window, deterministic) <
         std::tie(other.B, other.T, other.NH, other.NKV, other.HS, other.bf16, other.scale,
                  other.softcap, other.window, other.deterministic);
}

inline std::string SdpaShape::describe() const {
  std::string text = cat(bf16 ? "bf16" : "fp16", " B=", B, " T=", T, " NH=", NH, " NKV=", NKV,
                         " HS=", HS, " causal");
  if (window > 0) text += cat(" window=", window);
  if (softcap > 0) text += cat(" softcap=", softcap);
  return text + cat(" scale=", scale, deterministic ? "" : " (atomic dQ)");
}

inline SdpaShape sdpa_shape(bool bf16, int B, int T, int NH, int NKV, int HS,
                            const AttentionOptions& options) {
  SdpaShape s;
  s.B = B;
  s.T = T;
  s.NH = NH;
  s.NKV = NKV;
  s.HS = HS;
  s.bf16 = bf16;
  s.scale = static_cast<float>(options.scale_for(HS));
  s.softcap = static_cast<float>(options.softcap);
  s.window = options.window;
  return s;
}

inline std::string sdpa_shape_refusal(const SdpaShape& s) {
  if (s.B < 1 || s.T < 1 || s.NH < 1 || s.NKV < 1) {
    return cat("sizes must be positive (B=", s.B, " T=", s.T, " NH=", s.NH, " NKV=", s.NKV, ")");
  }
  if (s.NH % s.NKV != 0) return cat("NH=", s.NH, " is not a multiple of NKV=", s.NKV);
  if (s.HS < 8 || s.HS > 256 || s.HS % 8 != 0) {
    return cat("head size ", s.HS, " (cuDNN's fused attention takes multiples of 8 up to 256)");
  }
  if (s.window < 0) return cat("window ", s.window, " is negative");
  return "";
}

namespace sdpa_detail {

inline std::int64_t row_width(const SdpaShape& s) {
  return static_cast<std::int64_t>(s.NH + 2 * s.NKV) * s.HS;
}

// Heads of one qkv part, starting `first_head` heads into each row.
inline SdpaLayout qkv_part(const SdpaShape& s, int heads, int first_head) {
  const std::int64_t W = row_width(s);
  SdpaLayout layout;
  layout.dims = {s.B, heads, s.T, s.HS};
  layout.strides = {s.T * W, s.HS, W, 1};
  layout.offset = static_cast<std::int64_t>(first_head) * s.HS;
  return layout;
}

}  // namespace sdpa_detail

inline SdpaLayout sdpa_q_layout(const SdpaShape& s) {
  return sdpa_detail::qkv_part(s, s.NH, 0);
}
inline SdpaLayout sdpa_k_layout(const SdpaShape& s) {
  return sdpa_detail::qkv_part(s, s.NKV, s.NH);
}
inline SdpaLayout sdpa_v_layout(const SdpaShape& s) {
  return sdpa_detail::qkv_part(s, s.NKV, s.NH + s.NKV);
}

inline SdpaLayout sdpa_o_layout(const SdpaShape& s) {
  const std::int64_t C = static_cast<std::int64_t>(s.NH) * s.HS;
  SdpaLayout layout;
  layout.dims = {s.B, s.NH, s.T, s.HS};
  layout.strides = {s.T * C, s.HS, C, 1};
  return layout;
}

inline SdpaLayout sdpa_stats_layout(const SdpaShape& s) {
  SdpaLayout layout;
  layout.dims = {s.B, s.NH, s.T, 1};
  layout.strides = {static_cast<std::int64_t>(s.NH) * s.T, s.T, 1, 1};
  return layout;
}

inline SdpaLayout sdpa_transposed(const SdpaLayout& layout) {
  SdpaLayout t = layout;
  std::swap(t.dims[2], t.dims[3]);
  std::swap(t.strides[2], t.strides[3]);
  return t;
}

}  // namespace autotrain::kernels
