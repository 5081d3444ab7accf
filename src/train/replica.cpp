#include "autotrain/train/replica.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/lora_access.hpp"
#include "gpu/replica.hpp"

namespace autotrain::train {
namespace {

// The engine's hold on LoRA's frozen weights (whole, or its shard under ZeRO-3) and the unit
// hooks that merge the adapters into them.
class FrozenBase {
 public:
  FrozenBase(const LoraModel& lora, zero::Engine& engine)
      : engine_(engine),
        access_(lora.base, engine.hold_frozen(lora.frozen, lora.base_weights(), lora.quantization),
                lora.lora, lora.adapters, engine) {}
  model::LoraAccess& access() { return access_; }
  std::size_t bytes() const { return engine_.frozen_bytes() + access_.scratch_bytes(); }

 private:
  const zero::Engine& engine_;
  model::LoraAccess access_;
};

class CpuReplica final : public Replica {
 public:
  CpuReplica(const model::ParamLayout& layout, Communicator& comm,
             const zero::EngineOptions& options, int B, int T, model::Recompute recompute,
             const LoraModel* lora, bool bf16, std::uint64_t seed)
      : precision_(bf16 ? kernels::GemmPrecision::bf16 : kernels::GemmPrecision::fp32),
        bf16_(bf16),
        engine_(zero::Engine::create(layout, comm, options)),
        frozen_(lora ? std::make_unique<FrozenBase>(*lora, *engine_) : nullptr),
        model_(model::make_causal_lm<float>(lora ? lora->base : layout, B, T, recompute)),
        access_(frozen_ ? static_cast<model::UnitAccess&>(frozen_->access()) : *engine_),
        T_(T) {
    dropout_rows_.seed = seed;
  }

  zero::ModelState& state() override { return *engine_; }
  float forward(const std::int32_t* inputs, const std::int32_t* targets) override {
    if (frozen_) frozen_->access().evaluate();
    return model_->forward(access_, inputs, targets);
  }
  void forward_async(const std::int32_t* inputs, const std::int32_t* targets) override {
    if (frozen_) frozen_->access().train_on(dropout_rows_);
    last_loss_ = model_->forward(access_, inputs, targets);
  }
  void set_training_position(long long step, long long first_sample) override {
    dropout_rows_.move_to(step, first_sample, T_);
  }
  float last_loss() override { return last_loss_; }
  void backward(float loss_scale) override { model_->backward(access_, loss_scale); }
  void backward_weighted(float loss_scale, std::span<const float> weights) override {
    model_->backward_weighted(access_, loss_scale, weights);
  }
  std::span<const float> losses() override { return model_->losses(); }
  std::size_t activation_bytes() const override { return model_->activation_bytes(); }
  std::size_t frozen_bytes() const override { return frozen_ ? frozen_->bytes() : 0; }
  std::string device() const override { return "cpu"; }
  // bf16: the matrix products (run_setup.cpp resolved it to a CPU with native bf16); the rest
  // of each kernel, the master weights and the optimizer in fp32.
  std::string precision() const override { return bf16_ ? "bf16" : "fp32"; }
  void set_profiling(bool on) override { model_->set_profiling(on); }
  std::vector<model::ProfileEntry> profile() const override { return model_->profile(); }

 private:
  kernels::ScopedGemmPrecision precision_;
  bool bf16_;
  std::unique_ptr<zero::Engine> engine_;
  std::unique_ptr<FrozenBase> frozen_;
  std::unique_ptr<model::CausalLM> model_;
  model::UnitAccess& access_;
  int T_;
  model::DropoutRows dropout_rows_;  // of the next training forward
  float last_loss_ = 0;
};

}  // namespace

std::unique_ptr<Replica> make_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                      Communicator& comm, int B, int T, const LoraModel* lora) {
  std::unique_ptr<Replica> replica;
  if (setup.device == Device::cuda) {
#ifdef AUTOTRAIN_HAVE_CUDA
    replica = make_gpu_replica(setup, layout, comm, B, T, lora);
#else
    throw Error("device cuda: this build has no CUDA (setup_run should have refused it)");
#endif
  } else {
    replica = std::make_unique<CpuReplica>(
        layout, comm, engine_options(setup), B, T, recompute_mode(setup.params()), lora,
        setup.precision == Precision::bf16, static_cast<std::uint64_t>(setup.params().seed));
  }
  return replica;
}

}  // namespace autotrain::train
