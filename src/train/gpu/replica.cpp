// The CUDA replica (train/gpu/replica.hpp): binds the rank's GPU, then builds the device engine
// and the layout's family's device model (model/gpu/causal_lm.hpp) in the compute precision.
// Host code (a .cpp: the headers need C++20).
#include "replica.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/lora_access.hpp"
#include "autotrain/zero/gpu/engine.hpp"

namespace autotrain::train {
namespace {

// Selects the device for this thread before any other CUDA object of the replica exists.
struct ReplicaDevice {
  explicit ReplicaDevice(int device) : index(device) {
    AT_CHECK(device >= 0, "device cuda: this rank has no GPU bound");
    AT_CUDA_CHECK(cudaSetDevice(device));
    AT_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  }
  int index;
  cudaDeviceProp properties{};
};

// Dense peak FLOP/s of the tensor cores (datasheet, SXM parts) in the compute precision:
// fp32 runs CUBLAS_COMPUTE_32F (no TF32), so its peak is the CUDA cores'. 0 = unknown.
// AUTOTRAIN_GPU_PEAK_TFLOPS overrides it (PCIe parts, other clocks, other GPUs).
double peak_flops(const cudaDeviceProp& properties, Precision precision) {
  if (const char* forced = std::getenv("AUTOTRAIN_GPU_PEAK_TFLOPS")) {
    return std::atof(forced) * 1e12;
  }
  const bool fp32 = precision == Precision::fp32;
  // Hopper: the SXM parts (H100 SXM, H200; 132 multiprocessors) or the H100 PCIe (114, lower
  // clocks); dense bf16/fp16 and plain fp32 rates from NVIDIA's datasheets.
  if (properties.major == 9 && properties.multiProcessorCount >= 132) {
    return fp32 ? 66.9e12 : 989.4e12;
  }
  if (properties.major == 9) return fp32 ? 51.2e12 : 756.5e12;
  if (properties.major == 8 && properties.minor == 0) return fp32 ? 19.5e12 : 312e12;  // A100
  return 0;
}

template <typename F>
class GpuReplica final : public Replica {
 public:
  GpuReplica(const RunSetup& setup, const model::ParamLayout& layout, Communicator& comm, int B,
             int T, const LoraModel* lora)
      : binding_(setup.topology.device),
        precision_(setup.precision),
        engine_(
            zero::gpu::DeviceEngine<F>::create(layout, comm, engine_options(setup), stream_.get())),
        lora_(
            lora ? std::make_unique<model::gpu::DeviceLoraAccess<F>>(
                       lora->base,
                       engine_->hold_frozen(lora->frozen, lora->base_weights(), lora->quantization),
                       lora->lora, lora->adapters, *engine_, stream_.get(), blas_)
                 : nullptr),
        model_(model::gpu::make_device_causal_lm<F>(lora ? lora->base : layout, B, T, stream_.get(),
                                                    blas_, recompute_mode(setup.params()))),
        access_(lora_ ? static_cast<model::BasicUnitAccess<F>&>(*lora_) : *engine_),
        T_(T) {
    dropout_rows_.seed = static_cast<std::uint64_t>(setup.params().seed);
  }

  zero::ModelState& state() override { return *engine_; }
  float forward(const std::int32_t* inputs, const std::int32_t* targets) override {
    if (lora_) lora_->evaluate();
    return model_->forward(access_, inputs, targets);
  }
  void forward_async(const std::int32_t* inputs, const std::int32_t* targets) override {
    if (lora_) lora_->train_on(dropout_rows_);
    model_->forward_async(access_, inputs, targets);
  }
  void set_training_position(long long step, long long first_sample) override {
    dropout_rows_.move_to(step, first_sample, T_);
  }
  float last_loss() override { return model_->loss(); }
  void backward(float loss_scale) override { model_->backward(access_, loss_scale); }
  void backward_weighted(float loss_scale, std::span<const float> weights) override {
    model_->backward_weighted(access_, loss_scale, weights);
  }
  std::span<const float> losses() override { return model_->losses(); }
  std::size_t activation_bytes() const override { return model_->activation_bytes(); }
  // LoRA: the frozen base (whole, or the shard and gather slots) and the access's scratch.
  std::size_t frozen_bytes() const override {
    return lora_ ? engine_->frozen_bytes() + lora_->scratch_bytes() : 0;
  }
  std::size_t device_memory_bytes() const override {
    return engine_->device_bytes() + frozen_bytes() + model_->activation_bytes() +
           blas_.workspace_bytes();
  }
  std::string device() const override {
    return cat("cuda:", binding_.index, " (", binding_.properties.name, ")");
  }
  std::string precision() const override { return precision_name(precision_); }
  void set_profiling(bool on) override { model_->set_profiling(on); }
  std::vector<model::ProfileEntry> profile() const override { return model_->profile(); }
  double peak_flops_per_s() const override { return peak_flops(binding_.properties, precision_); }

 private:
  ReplicaDevice binding_;  // first: every member below lives on this device
  Precision precision_;
  autotrain::gpu::Stream stream_;
  kernels::gpu::BlasHandle blas_;
  std::unique_ptr<zero::gpu::DeviceEngine<F>> engine_;
  std::unique_ptr<model::gpu::DeviceLoraAccess<F>> lora_;  // with peft
  std::unique_ptr<model::gpu::DeviceCausalLM<F>> model_;
  model::BasicUnitAccess<F>& access_;  // lora_, or the engine
  int T_;
  model::DropoutRows dropout_rows_;  // of the next training forward
};

}  // namespace

std::unique_ptr<Replica> make_gpu_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                          Communicator& comm, int B, int T, const LoraModel* lora) {
  switch (setup.precision) {
    case Precision::bf16:
      return std::make_unique<GpuReplica<__nv_bfloat16>>(setup, layout, comm, B, T, lora);
    case Precision::fp16:
      return std::make_unique<GpuReplica<__half>>(setup, layout, comm, B, T, lora);
    default:
      return std::make_unique<GpuReplica<float>>(setup, layout, comm, B, T, lora);
  }
}

}  // namespace autotrain::train
