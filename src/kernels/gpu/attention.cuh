#pragma once
// Private to the attention kernels (attention.cu: the reference path and the dispatch;
// attention_fast.cu: the cuBLAS path): the grouped-query geometry both read, and its checks.
// qkv row (b, t) holds NH query heads, then NKV key heads, then NKV value heads, each HS wide;
// query head h reads key/value head h / group.
#include <cmath>
#include <cstddef>

#include "autotrain/kernels/gpu/attention.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

struct Geometry {
  int T;
  int NH;
  int NKV;
  int HS;
  int group;      // NH / NKV: query heads per key/value head
  float scale;    // 1 / sqrt(HS), or AttentionOptions' scale
  float cap = 0;  // the reference path's AttentionOptions: soft cap, window (0: none)
  int window = 0;

  // The first key position that query position t sees.
  __host__ __device__ int first_visible(int t) const {
    return window > 0 && t >= window ? t - window + 1 : 0;
  }
  // A score after the soft cap.
  __device__ float capped(float score) const { return cap > 0 ? cap * tanhf(score / cap) : score; }

  // Elements of a qkv row, and of an out row.
  __host__ __device__ std::size_t row() const {
    return static_cast<std::size_t>(NH + 2 * NKV) * HS;
  }
  __host__ __device__ std::size_t out_row() const { return static_cast<std::size_t>(NH) * HS; }
  // Offsets in a qkv row of query head h, key head kv and value head kv.
  __host__ __device__ std::size_t query(int h) const { return static_cast<std::size_t>(h) * HS; }
  __host__ __device__ std::size_t key(int kv) const {
    return static_cast<std::size_t>(NH + kv) * HS;
  }
  __host__ __device__ std::size_t value(int kv) const {
    return static_cast<std::size_t>(NH + NKV + kv) * HS;
  }
};

inline Geometry checked_geometry(int B, int T, int NH, int NKV, int HS) {
  AT_CHECK(B >= 1 && T >= 1 && NH >= 1 && NKV >= 1 && HS >= 1 && NH % NKV == 0, "attention: ", NH,
           " query heads must be a positive multiple of the ", NKV, " key/value heads (B = ", B,
           ", T = ", T, ", head size ", HS, ")");
  AT_CHECK(HS <= kMaxAttentionHeadSize, "attention: head size ", HS,
           " exceeds the CUDA kernels' limit of ", kMaxAttentionHeadSize);
  return Geometry{T, NH, NKV, HS, NH / NKV, 1.0f / std::sqrt(static_cast<float>(HS))};
}

// GPT-2's (C, NH): the heads of C / NH, NKV = NH.
inline void check_embedding(int C, int NH) {
  AT_CHECK(NH >= 1 && C >= NH && C % NH == 0, "attention: C = ", C,
           " must be a positive multiple of NH = ", NH);
}

}  // namespace
}  // namespace autotrain::kernels::gpu
