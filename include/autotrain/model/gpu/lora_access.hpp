#pragma once
// LoRA's unit hooks on a CUDA device: the counterpart of model/lora_access.hpp, between a device
// model (model/gpu/causal_lm.hpp) and the device engine (zero/gpu/engine.hpp). The model runs
// as it always does over merged weights W + s · B · A, and the gradients it computes for them
// become those of A and B. Every product is a cuBLAS gemm on the model's stream, in the compute
// type F with fp32 accumulation (LoraAdapters::merge_with, project_grads_with):
//
//   params(u)       the unit's adapters from `adapters` (the engine: gathered under ZeRO-3) are
//                   copied aside (grads_ready may come after their release); a unit with
//                   adapters is its frozen base (from `base`: the engine's frozen hold, gathered
//                   under ZeRO-3) copied into a scratch and merged there, and `base` releases
//                   the unit at once; one without is the frozen base itself, released with
//                   release(u)
//   grads(u)        a scratch for the merged weights' gradients, zeroed (queued) when it opens;
//                   units without adapters are frozen(u): the device models skip their
//                   gradients (GPT-2's final norm, which still asks, gets a scratch)
//   grads_ready(u)  the scratch is projected onto A and B (dA = s · Bᵀ · dW, dB = s · dW · Aᵀ)
//                   into adapters.grads(u), which is then ready
//
// Scratch buffers are device memory kept for reuse by size: the first step allocates them (at
// most the units open at once: a block's merged weights and its gradients, GPT-2's final norm's),
// later steps allocate nothing. Buffers given back are reused by work queued after the work that
// read them, on the same stream. Adapter dropout is not applied here (the device models have no
// linear-adapter hook): setup refuses lora_dropout > 0 on a GPU.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceLoraAccess final : public BasicUnitAccess<F> {
 public:
  // base: the frozen weights of base_layout's units on the device (only params and release are
  // called); adapters: the device access to the adapters' layout. Everything must outlive this.
  DeviceLoraAccess(const ParamLayout& base_layout, BasicUnitAccess<F>& base,
                   const LoraAdapters& lora, const ParamLayout& adapter_layout,
                   BasicUnitAccess<F>& adapters, cudaStream_t stream,
                   const kernels::gpu::BlasHandle& blas);

  const F* params(int unit) override;
  void release(int unit) override;
  F* grads(int unit) override;
  void grads_ready(int unit) override;
  bool frozen(int unit) const override { return !lora_.adapts(unit); }

  // Bytes of device memory this access holds: the adapters' copy and the scratch so far.
  std::size_t scratch_bytes() const { return adapter_values_.bytes() + scratch_bytes_; }

 private:
  struct Merged {
    autotrain::gpu::DeviceBuffer values;
    int users = 0;
  };

  // The copy of `unit`'s adapters that params() last made.
  F* kept_adapters(int unit) const;
  // A buffer of `numel` elements from those given back, or a new one (contents undefined).
  autotrain::gpu::DeviceBuffer take(std::size_t numel);
  void give_back(autotrain::gpu::DeviceBuffer buffer);
  // kernels::gpu::gemm adding into c, on stream_.
  auto gemm() const;

  const ParamLayout& base_layout_;
  BasicUnitAccess<F>& base_;
  const LoraAdapters& lora_;
  const ParamLayout& adapter_layout_;
  BasicUnitAccess<F>& adapters_;
  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  autotrain::gpu::DeviceBuffer adapter_values_;  // [adapter_layout.padded_size()] F
  std::map<int, Merged> merged_;
  std::map<int, autotrain::gpu::DeviceBuffer> grads_;
  std::map<std::size_t, std::vector<autotrain::gpu::DeviceBuffer>> spare_;  // by bytes
  std::size_t scratch_bytes_ = 0;
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
