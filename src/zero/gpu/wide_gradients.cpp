// A 16-bit model's gradient reducer for the engine's stage (wide_gradients.hpp).
#include "wide_gradients.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "memory.hpp"

namespace autotrain::zero::gpu {

template <typename F>
WideGradients<F>::WideGradients(const model::ParamLayout& layout, Communicator& comm,
                                WaitClock& clock, std::size_t bucket_elements, int stage,
                                cudaStream_t stream) {
  if (stage <= 1) {
    stage_ = std::make_unique<ReplicatedGradients<DeviceMemory<F>>>(
        layout, comm, clock, bucket_elements, /*scatter=*/stage == 1, DeviceMemory<F>{stream});
  } else {
    stage_ = std::make_unique<PartitionedGradients<DeviceMemory<F>>>(
        layout, comm, clock, bucket_elements, DeviceMemory<F>{stream});
  }
}

template class WideGradients<__nv_bfloat16>;
template class WideGradients<__half>;

}  // namespace autotrain::zero::gpu
