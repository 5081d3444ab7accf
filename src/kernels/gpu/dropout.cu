// The factors of LoRA's adapter dropout on the device (kernels/gpu/dropout.hpp). A block walks
// rows (grid-stride); each thread hashes its row once and then strides over the columns, so an
// element costs one hash of (row key + column), as on the CPU.
#include "autotrain/kernels/gpu/dropout.hpp"
#include "common.cuh"

namespace autotrain::kernels::gpu {
namespace {

template <typename F>
__global__ void dropout_factors_kernel(F* out, const F* v, std::size_t rows, std::size_t columns,
                                       DropoutHash mask, float kept_factor, bool add) {
  for (std::size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::uint64_t key = mask.row_key(row);
    const std::size_t first = row * columns;
    for (std::size_t j = threadIdx.x; j < columns; j += blockDim.x) {
      const float f = mask.kept(key, j) ? kept_factor : -1.0f;
      const float term = to_float(v[first + j]) * f;
      out[first + j] = from_float<F>(add ? to_float(out[first + j]) + term : term);
    }
  }
}

}  // namespace

template <typename F>
void dropout_factors(F* out, const F* v, std::size_t rows, std::size_t columns,
                     const DropoutHash& mask, float kept_factor, bool add, cudaStream_t stream) {
  if (rows == 0 || columns == 0) return;
  const unsigned blocks = static_cast<unsigned>(rows < 65536 ? rows : 65536);
  dropout_factors_kernel<F>
      <<<blocks, kBlockThreads, 0, stream>>>(out, v, rows, columns, mask, kept_factor, add);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_DROPOUT(F)                                                                          \
  template void dropout_factors<F>(F*, const F*, std::size_t, std::size_t, const DropoutHash&, \
                                   float, bool, cudaStream_t);
AT_GPU_INSTANTIATE(AT_DROPOUT)

}  // namespace autotrain::kernels::gpu
