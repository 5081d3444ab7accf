// Rotary position embeddings forward and backward on the device, in place. One thread owns W
// pairs (i, i + half) of one head of one row: it reads x[i..i+W) and x[i+half..i+half+W), the W
// cosines and sines of the row's position, and writes both runs back. W = kPack<F> (16-byte
// accesses to x; the fp32 tables then move 32 bytes, two 16-byte accesses, for 16-bit F) when
// half, the row stride and the pointers allow, else W = 1. No thread shares an element.
#include "autotrain/kernels/gpu/rope.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

// direction +1 rotates by θ (forward), -1 by -θ (backward: the transposed rotation). With
// `at_position` (device memory) the rows start at position *at_position instead of pos0.
template <int W, typename F>
__global__ void rope_kernel(F* x, const float* cos, const float* sin, int T, int heads, int HS,
                            int half, std::size_t stride, int pos0, const std::int32_t* at_position,
                            float direction, std::size_t count) {
  if (at_position != nullptr) pos0 = *at_position;
  const int packs = half / W;
  for (std::size_t at = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; at < count;
       at += std::size_t{gridDim.x} * blockDim.x) {
    const int pack = static_cast<int>(at % packs);
    const std::size_t head_row = at / packs;  // (b·T + t)·heads + h
    const int h = static_cast<int>(head_row % heads);
    const std::size_t bt = head_row / heads;
    const auto p = static_cast<std::size_t>(pos0) + bt % T;
    const int i = pack * W;
    F* lo = x + bt * stride + static_cast<std::size_t>(h) * HS + i;
    F* hi = lo + half;
    const auto c = load_packed<W>(cos + p * half + i);
    const auto s = load_packed<W>(sin + p * half + i);
    const auto a = load_packed<W>(lo);
    const auto b = load_packed<W>(hi);
    Packed<F, W> new_lo, new_hi;
    for (int j = 0; j < W; ++j) {
      const float sj = direction * s.get(j);
      new_lo.set(j, a.get(j) * c.get(j) - b.get(j) * sj);
      new_hi.set(j, b.get(j) * c.get(j) + a.get(j) * sj);
    }
    store_packed(lo, new_lo);
    store_packed(hi, new_hi);
  }
}

template <typename F>
void rotate(F* x, const float* cos, const float* sin, int B, int T, int heads, int HS, int R,
            std::size_t stride, int pos0, float direction, cudaStream_t stream,
            const std::int32_t* at_position = nullptr) {
  AT_CHECK(R > 0 && R % 2 == 0 && R <= HS,
           "rope: the rotary dimensions must be even, positive and at most the head size ", HS,
           ", got ", R);
  AT_CHECK(B >= 0 && T >= 0 && heads >= 1 && pos0 >= 0, "rope: B = ", B, ", T = ", T,
           ", heads = ", heads, ", pos0 = ", pos0, " must be non-negative (heads positive)");
  AT_CHECK(B * T <= 1 || stride >= static_cast<std::size_t>(heads) * HS, "rope: ", heads,
           " heads of ", HS, " do not fit the row stride ", stride);
  const int half = R / 2;
  const std::size_t head_rows = static_cast<std::size_t>(B) * T * heads;
  if (head_rows == 0) return;
  constexpr int W = kPack<F>;
  if (half % W == 0 && HS % W == 0 && stride % W == 0 && all_aligned_16(x, cos, sin)) {
    const std::size_t count = head_rows * (half / W);
    rope_kernel<W><<<grid_for(count), kBlockThreads, 0, stream>>>(
        x, cos, sin, T, heads, HS, half, stride, pos0, at_position, direction, count);
  } else {
    const std::size_t count = head_rows * half;
    rope_kernel<1><<<grid_for(count), kBlockThreads, 0, stream>>>(
        x, cos, sin, T, heads, HS, half, stride, pos0, at_position, direction, count);
  }
  AT_CUDA_CHECK_LAUNCH();
}

}  // namespace

template <typename F>
void rope_forward(F* x, const float* cos, const float* sin, int B, int T, int heads, int HS, int R,
                  std::size_t stride, int pos0, cudaStream_t stream) {
  rotate(x, cos, sin, B, T, heads, HS, R, stride, pos0, 1.0f, stream);
}

template <typename F>
void rope_backward(F* dx, const float* cos, const float* sin, int B, int T, int heads, int HS,
                   int R, std::size_t stride, int pos0, cudaStream_t stream) {
  rotate(dx, cos, sin, B, T, heads, HS, R, stride, pos0, -1.0f, stream);
}

template <typename F>
void rope_forward_at(F* x, const float* cos, const float* sin, int rows, int heads, int HS, int R,
                     std::size_t stride, const std::int32_t* position, cudaStream_t stream) {
  rotate(x, cos, sin, 1, rows, heads, HS, R, stride, 0, 1.0f, stream, position);
}

#define AT_ROPE(F)                                                                        \
  template void rope_forward<F>(F*, const float*, const float*, int, int, int, int, int,  \
                                std::size_t, int, cudaStream_t);                          \
  template void rope_backward<F>(F*, const float*, const float*, int, int, int, int, int, \
                                 std::size_t, int, cudaStream_t);                         \
  template void rope_forward_at<F>(F*, const float*, const float*, int, int, int, int,    \
                                   std::size_t, const std::int32_t*, cudaStream_t);
AT_GPU_INSTANTIATE(AT_ROPE)

}  // namespace autotrain::kernels::gpu
