#include "autotrain/train/replica.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "gpu/replica.hpp"

namespace autotrain::train {
namespace {

class CpuReplica final : public Replica {
 public:
  CpuReplica(const model::ParamLayout& layout, Communicator& comm,
             const zero::EngineOptions& options, int B, int T, bool recompute)
      : engine_(zero::Engine::create(layout, comm, options)),
        model_(model::make_causal_lm<float>(layout, B, T, recompute)) {}

  zero::ModelState& state() override { return *engine_; }
  float forward(const std::int32_t* inputs, const std::int32_t* targets) override {
    return model_->forward(*engine_, inputs, targets);
  }
  void forward_async(const std::int32_t* inputs, const std::int32_t* targets) override {
    last_loss_ = model_->forward(*engine_, inputs, targets);
  }
  float last_loss() override { return last_loss_; }
  void backward(float loss_scale) override { model_->backward(*engine_, loss_scale); }
  std::span<const float> losses() override { return model_->losses(); }
  std::size_t activation_bytes() const override { return model_->activation_bytes(); }
  std::string device() const override { return "cpu"; }
  std::string precision() const override { return "fp32"; }
  void set_profiling(bool on) override { model_->set_profiling(on); }
  std::vector<model::ProfileEntry> profile() const override { return model_->profile(); }

 private:
  std::unique_ptr<zero::Engine> engine_;
  std::unique_ptr<model::CausalLM> model_;
  float last_loss_ = 0;
};

}  // namespace

std::unique_ptr<Replica> make_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                      Communicator& comm, int B, int T) {
  std::unique_ptr<Replica> replica;
  if (setup.device == Device::cuda) {
#ifdef AUTOTRAIN_HAVE_CUDA
    replica = make_gpu_replica(setup, layout, comm, B, T);
#else
    throw Error("device cuda: this build has no CUDA (setup_run should have refused it)");
#endif
  } else {
    replica = std::make_unique<CpuReplica>(layout, comm, engine_options(setup), B, T,
                                           !setup.params().disable_gradient_checkpointing);
  }
  return replica;
}

}  // namespace autotrain::train
