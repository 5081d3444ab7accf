// LoRA's adapter dropout on the device (model/gpu/lora_access.hpp over either device model)
// against the CPU's LoraAccess in double on the same weights (rounded first to F) and the same
// micro-batch rows, so the same masks: the loss and the gradient of every adapter tensor, with
// the tolerances of device_model_test_support.hpp; activation checkpointing on and off give the
// same bits; evaluation drops nothing (the CPU's loss without dropout) and training does.
// Shapes: GPT-2 (L = 2, C = 64, 4 heads) and a Qwen3-style Llama (GQA 4 over 2 heads of 16,
// q/k/v biases, q/k norms, untied head), B = 2, T = 8, LoRA of rank 4 (scale 2) on every linear,
// p = 0.3, adapters drawn from N(0, 0.05²): larger adapters (0.1 with p = 0.3, or 0.2 without
// dropout) make the Llama shape's first-layer q/k gradients too ill-conditioned for 16-bit
// activations to hold bf16's tolerances (with dropout or without); fp32 holds 1e-4 at all of them.
//
// Every test needs a device: they skip with a message in builds without CUDA and on machines
// without a GPU.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuLoraDropout, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): the device LoRA "
                  "dropout is not tested";
}

#else

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../model_test_support.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/lora_access.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/lora_access.hpp"
#include "autotrain/model/param_layout.hpp"
#include "device_model_test_support.hpp"
#include "gpu/element_types.hpp"

namespace autotrain::model::gpu_lora_dropout_test {
namespace {

using autotrain::testing::DeviceState;
using autotrain::testing::Precision;
using autotrain::testing::same_bits;
using autotrain::testing::Vec;

constexpr int kB = 2;
constexpr int kT = 8;
constexpr int kV = 50;
constexpr float kLossScale = 8.0f;  // as fp16 training scales; the CPU gets the same factor
// The micro-batch's place in the global order: its masks.
const DropoutRows kRows{11, 3, 2 * kT};

ModelConfig gpt2_config() {
  ModelConfig c = ModelConfig::gpt2(2, 4, 64, 16, kV);
  c.padded_vocab_size = 64;
  c.validate();
  return c;
}

ModelConfig llama_config() {
  ModelConfig c = ModelConfig::gpt2(2, 4, 32, 16, kV);
  c.family = Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.padded_vocab_size = 64;
  c.n_kv_head = 2;
  c.head_dim = 16;
  c.intermediate_size = 48;
  c.tie_word_embeddings = false;
  c.qkv_bias = true;
  c.qk_norm = true;
  c.validate();
  return c;
}

LoraOptions options(double dropout) {
  LoraOptions o{4, 8.0, {"all-linear"}};
  o.dropout = dropout;
  return o;
}

// `values` rounded to F, as both devices see them.
template <typename F>
Vec rounded(Vec values) {
  for (auto& x : values) x = autotrain::testing::round_to<F>(x);
  return values;
}

// The base's initialisation and adapters drawn at random (B not zero, so every correction and
// gradient path carries a value), both rounded to F.
template <typename F>
struct LoraCase {
  explicit LoraCase(const ModelConfig& config, double dropout)
      : base(config),
        adapters(lora_layout(base, options(dropout), 1)),
        lora(base, adapters, options(dropout)) {
    std::vector<float> initial(base.padded_size());
    init_params(base, 3, initial);
    base_values = rounded<F>(Vec(initial.begin(), initial.end()));
    std::mt19937 gen(9);
    std::normal_distribution<double> dist(0, 0.05);
    Vec values(adapters.padded_size());
    for (auto& v : values) v = dist(gen);
    adapter_values = rounded<F>(values);
  }
  const ParamLayout base;
  const ParamLayout adapters;
  const LoraAdapters lora;
  Vec base_values, adapter_values;
};

struct Step {
  double loss = 0;
  Vec grads;  // the adapters'
};

enum class Mode { train, evaluate };

template <typename F>
class GpuLoraDropoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (autotrain::gpu::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none, the device LoRA dropout "
                      "is not tested";
    }
  }

  Step cpu_step(const LoraCase<F>& c, Mode mode) const {
    Vec base = c.base_values, values = c.adapter_values;
    Step step;
    step.grads.assign(c.adapters.padded_size(), 0.0);
    BasicFlatUnitAccess<double> frozen(c.base, base.data(), nullptr);
    BasicFlatUnitAccess<double> inner(c.adapters, values.data(), step.grads.data());
    BasicLoraAccess<double> access(c.base, frozen, c.lora, c.adapters, inner);
    if (mode == Mode::train) access.train_on(kRows);
    const auto model = make_causal_lm<double>(c.base, kB, kT, Recompute::selective);
    step.loss = model->forward(access, inputs_.data(), targets_.data());
    model->backward(access, kLossScale);
    return step;
  }

  // The device's step; its adapter gradients' bits into `bits` if given.
  Step device_step(const LoraCase<F>& c, Mode mode, Recompute recompute,
                   std::vector<typename Precision<F>::Bits>* bits = nullptr) const {
    DeviceState<F> base(c.base, c.base_values);
    DeviceState<F> adapters(c.adapters, c.adapter_values);
    auto frozen = base.access();
    auto inner = adapters.access();
    gpu::DeviceLoraAccess<F> access(c.base, frozen, c.lora, c.adapters, inner, adapters.stream(),
                                    adapters.blas());
    if (mode == Mode::train) access.train_on(kRows);
    const auto model = gpu::make_device_causal_lm<F>(c.base, kB, kT, adapters.stream(),
                                                     adapters.blas(), recompute);
    Step step;
    step.loss = model->forward(access, inputs_.data(), targets_.data());
    model->backward(access, kLossScale);
    step.grads = adapters.grads();
    if (bits) *bits = adapters.grad_bits();
    return step;
  }

  void expect_close(const Step& gpu, const Step& cpu, const ParamLayout& adapters,
                    const std::string& what) const {
    EXPECT_NEAR(gpu.loss, cpu.loss, Precision<F>::loss_rtol * std::abs(cpu.loss)) << what;
    for (const auto& t : adapters.tensors()) {
      autotrain::testing::expect_close_tensor<F>(gpu.grads, cpu.grads, t.offset, t.file_numel(),
                                                 t.name + " (" + what + ")");
    }
  }

  const std::vector<ModelConfig> families_{gpt2_config(), llama_config()};
  const std::vector<std::int32_t> inputs_ = random_tokens(kB * kT, kV, 11);
  const std::vector<std::int32_t> targets_ = random_tokens(kB * kT, kV, 12);
};

TYPED_TEST_SUITE(GpuLoraDropoutTest, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

std::string family_name(const ModelConfig& config) {
  return config.family == Family::gpt2 ? "GPT-2" : "Llama family";
}

TYPED_TEST(GpuLoraDropoutTest, LossAndAdapterGradientsMatchTheCpuWithTheSameMasks) {
  for (const ModelConfig& config : this->families_) {
    const LoraCase<TypeParam> c(config, 0.3);
    this->expect_close(this->device_step(c, Mode::train, Recompute::selective),
                       this->cpu_step(c, Mode::train), c.adapters,
                       family_name(config) + ", training");
  }
}

TYPED_TEST(GpuLoraDropoutTest, EvaluationDropsNothingAndTrainingDrops) {
  for (const ModelConfig& config : this->families_) {
    const LoraCase<TypeParam> c(config, 0.3);
    const Step evaluated = this->device_step(c, Mode::evaluate, Recompute::selective);
    this->expect_close(evaluated, this->cpu_step(LoraCase<TypeParam>(config, 0.0), Mode::train),
                       c.adapters, family_name(config) + ", evaluation against dropout 0");
    EXPECT_NE(this->device_step(c, Mode::train, Recompute::selective).loss, evaluated.loss)
        << family_name(config) << ": training dropped nothing";
  }
}

// The recomputation draws the forward's masks (they are a function of the rows, not stored);
// under selective the adapters' backward reads the recomputed norms, the forward's bits.
TYPED_TEST(GpuLoraDropoutTest, IsTheSameBitsWithAndWithoutActivationCheckpointing) {
  for (const ModelConfig& config : this->families_) {
    const LoraCase<TypeParam> c(config, 0.3);
    std::vector<typename Precision<TypeParam>::Bits> stored;
    const double kept = this->device_step(c, Mode::train, Recompute::none, &stored).loss;
    for (const Recompute mode : {Recompute::selective, Recompute::full}) {
      std::vector<typename Precision<TypeParam>::Bits> recomputed;
      EXPECT_EQ(kept, this->device_step(c, Mode::train, mode, &recomputed).loss)
          << family_name(config) << ", " << recompute_name(mode);
      EXPECT_TRUE(same_bits(stored, recomputed))
          << family_name(config) << ", " << recompute_name(mode);
    }
  }
}

}  // namespace
}  // namespace autotrain::model::gpu_lora_dropout_test
#endif  // AUTOTRAIN_HAVE_CUDA
