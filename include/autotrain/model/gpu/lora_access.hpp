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
// With adapter dropout (options().dropout > 0, between train_on() and evaluate()) the access is
// also the units' linear adapter (model/linear_adapter.hpp), as the CPU's: at each adapted linear
// the device models call it in forward, in backward's recomputation and in backward, and it adds
// the low-rank correction that dropout makes to the merged product (model/lora_dropout.hpp's
// algebra, over DeviceDropoutOps: the mask kernel of kernels/gpu/dropout.hpp, which draws the
// CPU's masks, and cuBLAS products).
//
// Scratch buffers are device memory kept for reuse by size: the first step allocates them (at
// most the units open at once: a block's merged weights and its gradients, GPT-2's final norm's;
// the dropout correction's [N, in] and [N, r] buffers), later steps allocate nothing. Buffers
// given back are reused by work queued after the work that read them, on the same stream.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/dropout.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/linear_adapter.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

// The dropout correction's arithmetic on the device (the Ops of model/lora_dropout.hpp): its
// working memory, the mask kernel and cuBLAS products, all on one stream.
template <typename F>
class DeviceDropoutOps {
 public:
  DeviceDropoutOps(cudaStream_t stream, const kernels::gpu::BlasHandle& blas)
      : stream_(stream), blas_(blas) {}
  F* delta(std::size_t n) { return grown(delta_, n); }
  F* u(std::size_t n) { return grown(u_, n); }
  F* du(std::size_t n) { return grown(du_, n); }
  void times_factors(const DropoutMask& mask, const F* v, F* out, std::size_t rows,
                     std::size_t columns, bool add) const {
    kernels::gpu::dropout_factors(out, v, rows, columns, mask.hash(),
                                  static_cast<float>(mask.kept_factor()), add, stream_);
  }
  void gemm(kernels::Transpose ta, kernels::Transpose tb, std::size_t M, std::size_t N,
            std::size_t K, double alpha, const F* a, std::size_t lda, const F* b, std::size_t ldb,
            double beta, F* c, std::size_t ldc) const {
    kernels::gpu::gemm(blas_, ta, tb, M, N, K, static_cast<float>(alpha), a, lda, b, ldb,
                       static_cast<float>(beta), c, ldc, stream_);
  }
  std::size_t bytes() const { return delta_.bytes() + u_.bytes() + du_.bytes(); }

 private:
  // At least n elements; a larger buffer replaces a smaller one once the stream's work that may
  // still read it is done (only in the first step: the shapes repeat).
  F* grown(autotrain::gpu::DeviceBuffer& buffer, std::size_t n);

  cudaStream_t stream_;
  const kernels::gpu::BlasHandle& blas_;
  autotrain::gpu::DeviceBuffer delta_, u_, du_;
};

template <typename F>
class DeviceLoraAccess final : public BasicUnitAccess<F>,
                               public DropoutPhase,
                               private BasicLinearAdapter<F> {
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

  // With adapter dropout in training (DropoutPhase::train_on), the units' linear adapter.
  BasicLinearAdapter<F>* linear_adapter(int unit) override {
    return drops(lora_, unit) ? this : nullptr;
  }

  // Bytes of device memory this access holds: the adapters' copy and the scratch so far.
  std::size_t scratch_bytes() const {
    return adapter_values_.bytes() + scratch_bytes_ + dropout_ops_.bytes();
  }

 private:
  struct Merged {
    autotrain::gpu::DeviceBuffer values;
    int users = 0;
  };

  // The dropout correction of the linear at `weight` (model/linear_adapter.hpp); device pointers.
  void forward(int unit, std::size_t weight, const F* x, F* y, std::size_t rows, std::size_t in,
               std::size_t out) override;
  void backward(int unit, std::size_t weight, const F* x, const F* dy, F* dx, std::size_t rows,
                std::size_t in, std::size_t out) override;

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
  DeviceDropoutOps<F> dropout_ops_;
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
