// GELU (tanh approximation) forward and backward on the device, fp32 arithmetic.
// Invariant: the input gradient is overwritten (=), never accumulated.
// Elementwise kernels (elementwise.cuh): 128-bit accesses where the buffers allow.
#include "autotrain/kernels/gpu/gelu.hpp"
#include "elementwise.cuh"

namespace autotrain::kernels::gpu {
namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// gelu(x) = x/2 · (1 + tanh(k·(x + a·x³))).
struct GeluForward {
  __device__ float operator()(float x) const {
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
  }
};

// dinp = gelu'(x) · dout.
struct GeluBackward {
  __device__ float operator()(float x, float d) const {
    const float th = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float sech2 = 1.0f - th * th;
    const float grad =
        0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    return grad * d;
  }
};

}  // namespace

template <typename F>
void gelu_forward(F* out, const F* inp, std::size_t N, cudaStream_t stream) {
  launch_elementwise(GeluForward{}, N, stream, out, inp);
}

template <typename F>
void gelu_backward(F* dinp, const F* inp, const F* dout, std::size_t N, cudaStream_t stream) {
  launch_elementwise(GeluBackward{}, N, stream, dinp, inp, dout);
}

#define AT_GELU(F)                                                        \
  template void gelu_forward<F>(F*, const F*, std::size_t, cudaStream_t); \
  template void gelu_backward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_GELU)

}  // namespace autotrain::kernels::gpu
