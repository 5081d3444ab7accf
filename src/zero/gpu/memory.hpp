#pragma once
// The device engine's memory policy (zero/memory.hpp says what a policy is): buffers of the
// compute type F on the GPU, and of fp32 for the gradients' reductions and sums (Wide: a bf16 or
// fp16 gradient is widened), their work queued on the model's stream; NCCL runs on the
// communicator's own stream. With it the reducers of zero/gradients.hpp and the gatherer of
// zero/param_gatherer.hpp run on the device:
//   - before_collective: comm.wait_for_stream(stream), so a collective reads a buffer only after
//     the kernels queued so far that wrote it (backward, the optimizer step) and overwrites one
//     only after the kernels that read its previous contents (adds, the model's use of a slot);
//   - before_use and consumer_stream: the stream waits for the collective (an event) and the
//     host goes on, so the kernels queued next read the finished result; the reducers' finish()
//     then waits on the host once per step.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "../wait_clock.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/quantize.hpp"

namespace autotrain::zero::gpu {

template <typename F>
constexpr DType compute_dtype() {
  if constexpr (std::is_same_v<F, float>) return DType::fp32;
  if constexpr (std::is_same_v<F, __nv_bfloat16>) return DType::bf16;
  return DType::fp16;
}

template <typename F>
struct DeviceMemory {
  using Element = F;
  using Buffer = autotrain::gpu::DeviceBuffer;
  static constexpr DType kDType = compute_dtype<F>();
  // Gradients are reduced and accumulated in fp32 whatever F is (zero/gradients.hpp).
  using Wide = DeviceMemory<float>;
  Wide wide() const { return {stream}; }
  // Zeroed (queued on the stream).
  Buffer allocate(std::size_t elements) const;
  static F* data(Buffer& buffer) { return buffer.as<F>(); }
  static std::size_t bytes(const Buffer& buffer) { return buffer.bytes(); }
  void zero(F* data, std::size_t count) const;
  void add_into(F* into, const F* part, std::size_t count) const;
  void widen(float* into, const F* values, std::size_t count) const;
  void add_widened(float* into, const F* values, std::size_t count) const;
  // Through a device buffer of fp32, cast on the stream as the engine casts its master weights;
  // returns with the stream drained.
  void upload(F* into, const float* values, std::size_t count) const;
  // Host floats rounded into host memory of F (an offloaded shard's values).
  static void upload_host(F* into, const float* values, std::size_t count);
  // Synchronous: the stream drained, then the copy.
  void upload_bytes(void* into, const void* bytes, std::size_t count) const;
  void copy_bytes(F* into, const std::byte* bits, std::size_t count) const {
    AT_CUDA_CHECK(cudaMemcpyAsync(into, bits, count * sizeof(F), cudaMemcpyDeviceToDevice, stream));
  }
  void dequantize(const kernels::QuantizedTensor& record, const std::byte* bytes,
                  const float* tables, F* into) const;
  void before_collective(Communicator& comm) const { comm.wait_for_stream(stream); }
  void before_use(CommHandle& handle, WaitClock& /*clock*/) const { handle.order_before(stream); }
  void* consumer_stream() const { return stream; }

  cudaStream_t stream = nullptr;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
