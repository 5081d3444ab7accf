// Residual connection forward and backward on the device, fp32 arithmetic.
// Invariant: both input gradients accumulate (+=): the residual stream's gradient sums the skip
// path and the block's path.
// An elementwise kernel (elementwise.cuh): 128-bit accesses where the buffers allow.
#include "autotrain/kernels/gpu/residual.hpp"
#include "elementwise.cuh"

namespace autotrain::kernels::gpu {
template <typename F>
void residual_forward(F* out, const F* inp1, const F* inp2, std::size_t N, cudaStream_t stream) {
  launch_elementwise(Add{}, N, stream, out, inp1, inp2);
}

#define AT_RESIDUAL(F) \
  template void residual_forward<F>(F*, const F*, const F*, std::size_t, cudaStream_t);
AT_GPU_INSTANTIATE(AT_RESIDUAL)

}  // namespace autotrain::kernels::gpu
