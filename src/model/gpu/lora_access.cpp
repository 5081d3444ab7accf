// LoRA's unit hooks on a CUDA device (model/gpu/lora_access.hpp). Host code: the products are
// kernels::gpu::gemm's (cuBLASLt), the copies and clears cudaMemcpyAsync / cudaMemsetAsync, all
// on the model's stream.
#include "autotrain/model/gpu/lora_access.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <utility>

#include "autotrain/core/gpu/check.hpp"

namespace autotrain::model::gpu {

using autotrain::gpu::DeviceBuffer;

template <typename F>
DeviceLoraAccess<F>::DeviceLoraAccess(const ParamLayout& base_layout, BasicUnitAccess<F>& base,
                                      const LoraAdapters& lora, const ParamLayout& adapter_layout,
                                      BasicUnitAccess<F>& adapters, cudaStream_t stream,
                                      const kernels::gpu::BlasHandle& blas)
    : base_layout_(base_layout),
      base_(base),
      lora_(lora),
      adapter_layout_(adapter_layout),
      adapters_(adapters),
      stream_(stream),
      blas_(blas),
      adapter_values_(adapter_layout.padded_size() * sizeof(F)),
      dropout_ops_(stream, blas) {}

template <typename F>
auto DeviceLoraAccess<F>::gemm() const {
  return [this](kernels::Transpose ta, kernels::Transpose tb, std::size_t M, std::size_t N,
                std::size_t K, double alpha, const F* a, std::size_t lda, const F* b,
                std::size_t ldb, F* c, std::size_t ldc) {
    kernels::gpu::gemm(blas_, ta, tb, M, N, K, static_cast<float>(alpha), a, lda, b, ldb, 1.0f, c,
                       ldc, stream_);
  };
}

template <typename F>
F* DeviceLoraAccess<F>::kept_adapters(int unit) const {
  return adapter_values_.as<F>() + adapter_layout_.units()[static_cast<std::size_t>(unit)].offset;
}

template <typename F>
const F* DeviceLoraAccess<F>::params(int unit) {
  const std::size_t numel = adapter_layout_.units()[static_cast<std::size_t>(unit)].numel;
  const F* adapters = adapters_.params(unit);
  if (numel > 0) {
    AT_CUDA_CHECK(cudaMemcpyAsync(kept_adapters(unit), adapters, numel * sizeof(F),
                                  cudaMemcpyDeviceToDevice, stream_));
  }
  if (!lora_.adapts(unit)) return base_.params(unit);
  Merged& merged = merged_[unit];
  if (merged.users++ == 0) {
    const std::size_t base_numel = base_layout_.units()[static_cast<std::size_t>(unit)].numel;
    merged.values = take(base_numel);
    AT_CUDA_CHECK(cudaMemcpyAsync(merged.values.data(), base_.params(unit), base_numel * sizeof(F),
                                  cudaMemcpyDeviceToDevice, stream_));
    base_.release(unit);  // the model reads the merged copy: a gathered unit is free again
    lora_.merge_with(unit, kept_adapters(unit), merged.values.template as<F>(), gemm());
  }
  return merged.values.template as<F>();
}

template <typename F>
void DeviceLoraAccess<F>::release(int unit) {
  adapters_.release(unit);
  if (!lora_.adapts(unit)) {
    base_.release(unit);
    return;
  }
  const auto open = merged_.find(unit);
  if (open == merged_.end() || --open->second.users > 0) return;
  give_back(std::move(open->second.values));
  merged_.erase(open);
}

template <typename F>
F* DeviceLoraAccess<F>::grads(int unit) {
  auto open = grads_.find(unit);
  if (open == grads_.end()) {
    const std::size_t numel = base_layout_.units()[static_cast<std::size_t>(unit)].numel;
    DeviceBuffer scratch = take(numel);
    AT_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, numel * sizeof(F), stream_));
    open = grads_.emplace(unit, std::move(scratch)).first;
  }
  return open->second.template as<F>();
}

template <typename F>
void DeviceLoraAccess<F>::grads_ready(int unit) {
  F* into = adapters_.grads(unit);
  const auto open = grads_.find(unit);
  if (open != grads_.end()) {
    if (lora_.adapts(unit)) {
      lora_.project_grads_with(unit, kept_adapters(unit),
                               static_cast<const F*>(open->second.template as<F>()), into, gemm());
    }
    give_back(std::move(open->second));
    grads_.erase(open);
  }
  adapters_.grads_ready(unit);
}

template <typename F>
void DeviceLoraAccess<F>::forward(int unit, std::size_t weight, const F* x, F* y, std::size_t rows,
                                  std::size_t in, std::size_t out) {
  lora_.dropout_forward(unit, kept_adapters(unit), dropout_rows(), weight, x, y, rows, in, out,
                        dropout_ops_);
}

template <typename F>
void DeviceLoraAccess<F>::backward(int unit, std::size_t weight, const F* x, const F* dy, F* dx,
                                   std::size_t rows, std::size_t in, std::size_t out) {
  // The correction's gradients of A and B go straight to the adapters'; grads_ready(unit) adds
  // the merged weights' after them.
  lora_.dropout_backward(unit, kept_adapters(unit), dropout_rows(), weight, x, dy, dx,
                         adapters_.grads(unit), rows, in, out, dropout_ops_);
}

template <typename F>
DeviceBuffer DeviceLoraAccess<F>::take(std::size_t numel) {
  auto& spare = spare_[numel * sizeof(F)];
  if (spare.empty()) {
    scratch_bytes_ += numel * sizeof(F);
    return DeviceBuffer(numel * sizeof(F));
  }
  DeviceBuffer buffer = std::move(spare.back());
  spare.pop_back();
  return buffer;
}

template <typename F>
void DeviceLoraAccess<F>::give_back(DeviceBuffer buffer) {
  spare_[buffer.bytes()].push_back(std::move(buffer));
}

template <typename F>
F* DeviceDropoutOps<F>::grown(DeviceBuffer& buffer, std::size_t n) {
  if (buffer.bytes() < n * sizeof(F)) {
    AT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // queued work may still read the old one
    buffer = DeviceBuffer(n * sizeof(F));
  }
  return buffer.as<F>();
}

template class DeviceDropoutOps<float>;
template class DeviceDropoutOps<__nv_bfloat16>;
template class DeviceDropoutOps<__half>;
template class DeviceLoraAccess<float>;
template class DeviceLoraAccess<__nv_bfloat16>;
template class DeviceLoraAccess<__half>;

}  // namespace autotrain::model::gpu
