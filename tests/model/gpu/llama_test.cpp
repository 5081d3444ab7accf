// DeviceLlama<F> and DeviceLlamaDecoder<F> against the CPU model BasicLlama<double> on the same
// parameters (rounded first to F) and the same batch: loss, per-position losses and the gradient
// of every tensor element (the padded vocabulary rows and unit padding must stay exactly zero),
// with ignored targets, under activation checkpointing (the same bits as without), in the CPU
// model's hook order, and the decoder's logits against the full forward at every position.
// Shape (Qwen3's options, so one model takes every path): L = 2, NH = 4 heads over NKV = 2
// key/value heads of D = 16 (not C/NH = 8), C = 32, I = 48, V = 50 padded to Vp = 64, q/k/v
// biases, q/k norms, llama3 rope scaling, max positions 16, B = 2, T = 8; tied and untied heads.
// D = 16 is a flash-attention head size: the attention path is the one AUTOTRAIN_CUDA_ATTENTION
// names, flash in bf16/fp16 when unset (scripts/test-cuda-emulated.sh runs these tests unset and
// with fast and reference; gpu-check.sh with fast, reference and flash).
//
// Tolerances per element type: device_model_test_support.hpp. Every test needs a device: they
// skip with a message in builds without CUDA and on machines without a GPU.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuLlama, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): the device model is "
                  "not tested";
}

#else

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/llama.hpp"
#include "autotrain/model/gpu/llama_decoder.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/llama.hpp"
#include "autotrain/model/param_layout.hpp"
#include "device_model_test_support.hpp"
#include "gpu/element_types.hpp"
#include "test_support.hpp"

namespace autotrain::model::gpu_llama_test {
namespace {

using autotrain::testing::DeviceState;
using autotrain::testing::error_of;
using autotrain::testing::Precision;
using autotrain::testing::RecordingAccess;
using autotrain::testing::same_bits;
using autotrain::testing::Vec;

constexpr int kB = 2;
constexpr int kT = 8;
constexpr int kV = 50;
constexpr std::size_t kBT = static_cast<std::size_t>(kB) * kT;
// Scales the loss as fp16 training does; the CPU model gets the same factor.
constexpr float kLossScale = 8.0f;

ModelConfig tiny_config(bool tied) {
  ModelConfig c = ModelConfig::gpt2(2, 4, 32, 16, kV);
  c.family = Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.padded_vocab_size = 64;
  c.n_kv_head = 2;
  c.head_dim = 16;
  c.intermediate_size = 48;
  c.tie_word_embeddings = tied;
  c.qkv_bias = true;
  c.qk_norm = true;
  c.norm_eps = 1e-6;
  c.rope_theta = 100;
  c.rope_scaling = {"llama3", 4, 1, 4, 8, {}, {}, 1};
  c.validate();
  return c;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, kV - 1);
  std::vector<std::int32_t> tokens(n);
  for (auto& t : tokens) t = dist(gen);
  return tokens;
}

// The family's initialisation plus noise on every real element (the padded vocabulary rows stay
// zero), so biases and norm weights are not 0 and 1 and every path carries a gradient; rounded
// to F so both models see the same values.
template <typename F>
Vec rounded_params(const ParamLayout& layout) {
  std::vector<float> init(layout.padded_size());
  init_params(layout, 7, init);
  Vec params(init.begin(), init.end());
  std::mt19937 gen(3);
  std::normal_distribution<double> noise(0.0, 0.05);
  for (const auto& t : layout.tensors()) {
    for (std::size_t i = 0; i < t.file_numel(); ++i) params[t.offset + i] += noise(gen);
  }
  for (auto& x : params) x = autotrain::testing::round_to<F>(x);
  return params;
}

// Phi-3's options on the same decoder: fused qkv_proj and gate_up_proj, rotary embeddings on 12
// of the 16 dimensions of each head, longrope's factors and attention factor.
ModelConfig tiny_phi3_config(bool tied) {
  ModelConfig c = tiny_config(tied);
  c.architecture = "Phi3ForCausalLM";
  c.qkv_bias = c.qk_norm = false;
  c.rotary_dim = 12;
  c.rope_scaling = {};
  c.rope_scaling.type = "longrope";
  c.rope_scaling.original_max_position_embeddings = 16;
  c.rope_scaling.short_factor = {1.0, 1.5, 2.0, 3.0, 5.0, 8.0};
  c.rope_scaling.long_factor = std::vector<double>(6, 10.0);
  c.rope_scaling.attention_factor = 1.2;
  c.validate();
  return c;
}

// Gemma 2's (or Gemma 3's) options on the same decoder: norm offsets, sandwich norms, the
// embedding scale, a query scale, GeGLU, a window of 3 in layer 0; Gemma 2's soft caps, Gemma 3's
// q/k norms, local rope base and linear scaling.
ModelConfig tiny_gemma_config(bool gemma3) {
  ModelConfig c = tiny_config(true);
  c.architecture = gemma3 ? "Gemma3ForCausalLM" : "Gemma2ForCausalLM";
  c.qkv_bias = false;
  c.qk_norm = gemma3;
  c.gate = GateActivation::gelu_tanh;
  c.norm_offset = c.embed_scale = c.sandwich_norms = true;
  c.query_pre_attn_scalar = 24;
  c.attn_softcap = gemma3 ? 0 : 3;
  c.final_softcap = gemma3 ? 0 : 4;
  c.sliding_window = 3;
  c.sliding_layers = {true, false};
  c.rope_local_theta = gemma3 ? 10 : 0;
  c.rope_scaling = {};
  if (gemma3) c.rope_scaling = {"linear", 2, 1, 4, 8, {}, {}, 1};
  c.validate();
  return c;
}

// One layout (by default Qwen3's, tied or untied head), its parameters and the device state
// they start from.
template <typename F>
struct Model {
  explicit Model(bool tied) : Model(tiny_config(tied)) {}
  explicit Model(const ModelConfig& config)
      : layout(config), params(rounded_params<F>(layout)), device(layout, params) {}
  const ParamLayout layout;
  const Vec params;  // host copy, already rounded to F
  DeviceState<F> device;
};

// The CPU model in double: loss, per-position losses and gradients of one forward/backward.
struct CpuStep {
  double loss = 0;
  std::vector<double> losses;
  Vec grads;
};
// With `weights`, backward is backward_weighted's (the preference losses').
CpuStep cpu_step(const ParamLayout& layout, const Vec& params, const std::vector<std::int32_t>& in,
                 const std::vector<std::int32_t>& targets,
                 const std::vector<float>* weights = nullptr) {
  Vec cpu_params = params;
  CpuStep step;
  step.grads.assign(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> access(layout, cpu_params.data(), step.grads.data());
  BasicLlama<double> cpu(layout, kB, kT);
  step.loss = cpu.forward(access, in.data(), targets.data());
  const auto losses = cpu.losses();
  step.losses.assign(losses.begin(), losses.end());
  if (weights != nullptr) {
    const std::vector<double> wide(weights->begin(), weights->end());
    cpu.backward_weighted(access, kLossScale, wide);
  } else {
    cpu.backward(access, kLossScale);
  }
  return step;
}

template <typename F>
class GpuLlamaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (autotrain::gpu::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none, the device model is not "
                      "tested";
    }
  }

  // The device model's loss, per-position losses and every gradient against the CPU's for one
  // forward/backward on `targets`.
  // With `weights`: backward_weighted on both.
  void expect_step_matches_the_cpu(const ModelConfig& config,
                                   const std::vector<std::int32_t>& targets,
                                   const std::vector<float>* weights = nullptr) {
    Model<F> m(config);
    const std::string head =
        " " + config.architecture + (config.tie_word_embeddings ? " (tied)" : " (untied)");
    const CpuStep cpu = cpu_step(m.layout, m.params, inputs_, targets, weights);
    auto access = m.device.access();
    gpu::DeviceLlama<F> model(m.layout, kB, kT, m.device.stream(), m.device.blas());
    const float loss = model.forward(access, inputs_.data(), targets.data());
    if (weights != nullptr) {
      model.backward_weighted(access, kLossScale, *weights);
    } else {
      model.backward(access, kLossScale);
    }
    const Vec grads = m.device.grads();

    // A score head's losses are scores of either sign, whose mean cancels: its error is the
    // largest score's, not a share of the mean.
    double scores = 0;
    for (const double score : cpu.losses)
      scores = config.score_head ? std::max(scores, std::abs(score)) : 0;
    EXPECT_NEAR(loss, cpu.loss, Precision<F>::loss_rtol * (std::abs(cpu.loss) + scores)) << head;
    const auto losses = model.losses();
    ASSERT_EQ(losses.size(), kBT);
    for (std::size_t i = 0; i < kBT; ++i) {
      EXPECT_NEAR(losses[i], cpu.losses[i],
                  Precision<F>::loss_rtol * (std::abs(cpu.losses[i]) + scores) + 1e-6)
          << "loss of position " << i << head;
    }
    std::vector<bool> real(m.layout.padded_size(), false);
    for (const auto& t : m.layout.tensors()) {
      autotrain::testing::expect_close_tensor<F>(grads, cpu.grads, t.offset, t.file_numel(),
                                                 t.name + head);
      std::fill_n(real.begin() + static_cast<std::ptrdiff_t>(t.offset), t.file_numel(), true);
    }
    for (std::size_t i = 0; i < real.size(); ++i) {
      if (!real[i]) {
        ASSERT_EQ(grads[i], 0.0) << "padding element " << i << " of the flat gradient was written"
                                 << head;
      }
    }
  }

  // generate's path against the CPU model (DecoderGivesTheLogitsOfTheFullForwardAtEveryPosition).
  void expect_decoder_matches_the_cpu(Model<F>& m, bool tied);

  const std::vector<std::int32_t> inputs_ = random_tokens(kBT, 11);
  const std::vector<std::int32_t> targets_ = random_tokens(kBT, 12);
};

TYPED_TEST_SUITE(GpuLlamaTest, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

TYPED_TEST(GpuLlamaTest, LossAndEveryGradientMatchTheCpuModelInDouble) {
  for (const bool tied : {true, false}) {
    this->expect_step_matches_the_cpu(tiny_config(tied), this->targets_);
  }
}

// backward_weighted (the preference losses' objective Σ w · loss, weights of both signs, the
// ignored targets' unused) gives the CPU's gradients.
TYPED_TEST(GpuLlamaTest, WeightedBackwardMatchesTheCpuModelInDouble) {
  std::vector<std::int32_t> targets = this->targets_;
  std::vector<float> weights(kBT);
  for (std::size_t i = 0; i < kBT; ++i) {
    weights[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
    if (i % 5 == 2) targets[i] = kIgnoreTarget;
  }
  this->expect_step_matches_the_cpu(tiny_config(false), targets, &weights);
}

// The score head (a reward model): the marked positions' scores and the gradient of their weighted
// sum (a pair's chosen and rejected), tied and untied, and on Gemma 2, whose logits' soft cap the
// score does not take.
TYPED_TEST(GpuLlamaTest, ScoreHeadMatchesTheCpuModelInDouble) {
  std::vector<std::int32_t> targets(kBT, kIgnoreTarget);
  std::vector<float> weights(kBT, 0.0f);
  targets[kT - 3] = 4;  // row 0's last real token, padding after it
  weights[kT - 3] = 0.7f;
  targets[kBT - 1] = 0;
  weights[kBT - 1] = -0.4f;
  for (ModelConfig config : {tiny_config(true), tiny_config(false), tiny_gemma_config(false)}) {
    config.score_head = true;
    this->expect_step_matches_the_cpu(config, targets, &weights);
  }
}

// Phi-3 runs the same device model: its fused tensors found by role, partial rotary
// embeddings and longrope's scaled tables as the CPU's.
TYPED_TEST(GpuLlamaTest, Phi3LossAndEveryGradientMatchTheCpuModelInDouble) {
  for (const bool tied : {true, false}) {
    this->expect_step_matches_the_cpu(tiny_phi3_config(tied), this->targets_);
  }
}

// Gemma 2 and 3 run the same device model: their attention (a query scale, soft caps and a window)
// on the flash kernels in bf16 and fp16, on the reference path in fp32.
TYPED_TEST(GpuLlamaTest, GemmaLossAndEveryGradientMatchTheCpuModelInDouble) {
  for (const bool gemma3 : {false, true}) {
    this->expect_step_matches_the_cpu(tiny_gemma_config(gemma3), this->targets_);
  }
}

// Targets of kIgnoreTarget carry no loss: the mean and its gradient are over the others, as on
// the CPU (an SFT run's prompt positions).
TYPED_TEST(GpuLlamaTest, IgnoredTargetsGiveTheCpusMaskedLossAndGradients) {
  auto targets = this->targets_;
  for (std::size_t i = 0; i < kBT; i += 3) targets[i] = kIgnoreTarget;
  this->expect_step_matches_the_cpu(tiny_config(false), targets);
}

// The attention path is the one asked for where it applies: in bf16/fp16 cuDNN's fused attention
// where its plans build for the model's shape (never under the emulator), else flash attention
// (D = 16 is one of its head sizes), unless the fast or reference path was asked for; the fast or
// reference path (attention_forward's choice) otherwise. Gemma's models choose as Qwen3's.
TYPED_TEST(GpuLlamaTest, RunsTheFusedAttentionWhereItWasAskedForAndApplies) {
  using F = TypeParam;
  Model<F> m(true);
  gpu::DeviceLlama<F> model(m.layout, kB, kT, m.device.stream(), m.device.blas());
  const ModelConfig& c = m.layout.config();
  ASSERT_TRUE(kernels::gpu::flash_attention_supports(2, c.n_head, c.kv_heads(), c.head_size()));
  const auto kind = kernels::gpu::attention_kind();
  using kernels::AttentionKind, kernels::AttentionPath;
  AttentionPath expected = AttentionPath::unfused;
  if constexpr (sizeof(F) == 2) {
    const kernels::SdpaShape shape = kernels::sdpa_shape(std::is_same_v<F, __nv_bfloat16>, kB, kT,
                                                         c.n_head, c.kv_heads(), c.head_size(), {});
    const bool cudnn_builds =
        kernels::gpu::cudnn_attention_prepare(shape, m.device.stream()).empty();
    if (kernels::attention_tries_cudnn(kind) && cudnn_builds) {
      expected = AttentionPath::cudnn;
    } else if (kind != AttentionKind::fast && kind != AttentionKind::reference) {
      expected = AttentionPath::flash;
    }
    if (!kernels::gpu::cudnn_attention_built()) {
      EXPECT_FALSE(cudnn_builds);
    }
  }
  EXPECT_EQ(model.attention_path(), expected);
  // Gemma's options (a query scale, soft caps, a window) take the flash kernels as well.
  if (kind == AttentionKind::cudnn) return;  // whether its plans build for them, a GPU says
  for (const bool gemma3 : {false, true}) {
    Model<F> gemma(tiny_gemma_config(gemma3));
    gpu::DeviceLlama<F> device(gemma.layout, kB, kT, gemma.device.stream(), gemma.device.blas());
    EXPECT_EQ(device.attention_path(), expected) << (gemma3 ? "Gemma 3" : "Gemma 2");
  }
}

// What the memory plan counts on a GPU (planned_activation_bytes, computed on the host) is what the
// model allocates, for both heads, Phi-3's fused projections and Gemma 2's and 3's options
// (sandwich norms, q/k norms, a local rope table), every recompute mode, one sequence and three.
TYPED_TEST(GpuLlamaTest, PlannedActivationBytesAreWhatTheModelAllocates) {
  using F = TypeParam;
  for (const ModelConfig& config : {tiny_config(true), tiny_config(false), tiny_phi3_config(true),
                                    tiny_gemma_config(false), tiny_gemma_config(true)}) {
    Model<F> m(config);
    for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      for (const int B : {1, 3}) {
        const auto model = gpu::make_device_causal_lm<F>(m.layout, B, kT, m.device.stream(),
                                                         m.device.blas(), mode);
        EXPECT_EQ(gpu::planned_activation_bytes<F>(m.layout, B, kT, mode),
                  model->activation_bytes())
            << config.architecture << " " << recompute_name(mode) << " B=" << B;
      }
    }
  }
}

// Activation checkpointing, selective and full: two micro-steps (the second forward overwrites what
// the first backward's recomputation left in the slots) give the same losses and gradients to the
// bit as keeping every activation, in less activation memory (full the least);
// make_device_causal_lm builds the same.
// Real GPU only: that cuBLASLt and cuBLAS give the same bits from one call of a shape to the next
// (the emulator computes every product one way).
TYPED_TEST(GpuLlamaTest, RecomputeGivesTheSameBitsAsKeepingEveryActivation) {
  using F = TypeParam;
  Model<F> m(false);
  struct Outcome {
    std::vector<float> losses;  // each step's mean, then its per-position losses
    std::vector<typename Precision<F>::Bits> grads;
    std::size_t activation_bytes = 0;
  };
  const auto train = [&](Recompute recompute) {
    m.device.zero_grads();
    auto access = m.device.access();
    const auto model = gpu::make_device_causal_lm<F>(m.layout, kB, kT, m.device.stream(),
                                                     m.device.blas(), recompute);
    Outcome run;
    for (std::uint32_t step = 0; step < 2; ++step) {
      const auto inputs = random_tokens(kBT, 31 + step), targets = random_tokens(kBT, 41 + step);
      run.losses.push_back(model->forward(access, inputs.data(), targets.data()));
      const auto losses = model->losses();
      run.losses.insert(run.losses.end(), losses.begin(), losses.end());
      model->backward(access, kLossScale);
    }
    run.grads = m.device.grad_bits();
    run.activation_bytes = model->activation_bytes();
    return run;
  };
  const Outcome kept = train(Recompute::none);
  std::size_t previous_bytes = kept.activation_bytes;
  for (const Recompute mode : {Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(recompute_name(mode));
    const Outcome recomputed = train(mode);
    EXPECT_TRUE(same_bits(kept.losses, recomputed.losses));
    EXPECT_TRUE(same_bits(kept.grads, recomputed.grads));
    EXPECT_LT(recomputed.activation_bytes, previous_bytes);
    previous_bytes = recomputed.activation_bytes;
  }
}

// The hooks a ZeRO engine sees (stage 3 gathers by them): the CPU model's order, tied and untied,
// with activation checkpointing on (the recomputation asks for no extra unit).
TYPED_TEST(GpuLlamaTest, CallsTheUnitHooksInTheCpuModelsOrder) {
  using F = TypeParam;
  for (const bool tied : {true, false}) {
    Model<F> m(tied);
    Vec cpu_params = m.params;
    Vec cpu_grads(m.layout.padded_size(), 0.0);
    BasicFlatUnitAccess<double> cpu_flat(m.layout, cpu_params.data(), cpu_grads.data());
    std::vector<std::string> cpu_events;
    RecordingAccess<double> cpu_access(cpu_flat, cpu_events);
    BasicLlama<double> cpu(m.layout, kB, kT, Recompute::selective);
    cpu.forward(cpu_access, this->inputs_.data(), this->targets_.data());
    cpu.backward(cpu_access, 1.0);

    auto flat = m.device.access();
    std::vector<std::string> events;
    RecordingAccess<F> access(flat, events);
    gpu::DeviceLlama<F> model(m.layout, kB, kT, m.device.stream(), m.device.blas(),
                              Recompute::selective);
    model.forward(access, this->inputs_.data(), this->targets_.data());
    model.backward(access, 1.0f);
    m.device.sync();

    ASSERT_FALSE(cpu_events.empty());
    EXPECT_EQ(events, cpu_events) << (tied ? "tied" : "untied");
  }
}

// The profile has the CPU model's rows; every kernel kind the step runs has time in the
// direction it runs in (the residual's backward is folded into the norms', as on the CPU), and a
// model that is not profiling reports zeros.
TYPED_TEST(GpuLlamaTest, ProfileTimesEveryKernelKindOfAStepWithTheCpuModelsRows) {
  using F = TypeParam;
  Model<F> m(true);
  auto access = m.device.access();
  gpu::DeviceLlama<F> model(m.layout, kB, kT, m.device.stream(), m.device.blas());
  model.set_profiling(true);
  model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, 1.0f);
  const auto rows = model.profile();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kOpCount));
  for (int op = 0; op < kOpCount; ++op) {
    const auto& row = rows[static_cast<std::size_t>(op)];
    EXPECT_EQ(row.name, profile_op_name(op, m.layout.config()));
    EXPECT_GT(row.forward_s, 0.0) << row.name;
    if (op != kResidual) {
      EXPECT_GT(row.backward_s, 0.0) << row.name;
    }
  }
  model.set_profiling(false);
  model.forward(access, this->inputs_.data(), this->targets_.data());
  for (const auto& row : model.profile()) EXPECT_EQ(row.forward_s + row.backward_s, 0.0);
}

TYPED_TEST(GpuLlamaTest, RejectsBadTokenIdsShapesAndBackwardWithoutForwardNamingTheProblem) {
  using F = TypeParam;
  Model<F> m(true);
  auto access = m.device.access();
  gpu::DeviceLlama<F> model(m.layout, kB, kT, m.device.stream(), m.device.blas());

  auto inputs = this->inputs_;
  inputs[3] = kV;
  const std::string bad_input =
      error_of([&] { model.forward(access, inputs.data(), this->targets_.data()); });
  EXPECT_NE(bad_input.find("inputs[3] = 50"), std::string::npos) << bad_input;

  auto targets = this->targets_;
  targets[5] = -2;  // -1 is kIgnoreTarget (no loss)
  const std::string bad_target =
      error_of([&] { model.forward(access, this->inputs_.data(), targets.data()); });
  EXPECT_NE(bad_target.find("targets[5] = -2"), std::string::npos) << bad_target;

  const std::string early = error_of([&] { model.backward(access, 1.0f); });
  EXPECT_NE(early.find("needs a forward()"), std::string::npos) << early;

  const std::string too_long =
      error_of([&] { gpu::DeviceLlama<F>(m.layout, kB, 17, m.device.stream(), m.device.blas()); });
  EXPECT_NE(too_long.find("sequence length 17"), std::string::npos) << too_long;
}

// generate's path: the decoder's logits after each token of a sequence against the CPU model's
// full forward over the tokens so far (next_token_logits) in double, tied and untied, in two
// passes (the second after a reset); one token asks for no logits, as a prompt's tokens before
// its last do. Then a full cache and a bad token are refused.
TYPED_TEST(GpuLlamaTest, DecoderGivesTheLogitsOfTheFullForwardAtEveryPosition) {
  using F = TypeParam;
  for (const bool tied : {true, false}) {
    Model<F> m(tied);
    SCOPED_TRACE("Qwen3");
    this->expect_decoder_matches_the_cpu(m, tied);
  }
  Model<F> phi3(tiny_phi3_config(false));
  SCOPED_TRACE("Phi-3");
  this->expect_decoder_matches_the_cpu(phi3, false);
  for (const bool gemma3 : {false, true}) {
    Model<F> gemma(tiny_gemma_config(gemma3));
    SCOPED_TRACE(gemma3 ? "Gemma 3" : "Gemma 2");
    this->expect_decoder_matches_the_cpu(gemma, true);
  }
}

// Launched kernel by kernel and as CUDA graphs (captured at the second step of each kind: with
// logits in the first pass, without in the second).
template <typename F>
void GpuLlamaTest<F>::expect_decoder_matches_the_cpu(Model<F>& m, bool tied) {
  for (const auto launch : {gpu::DecodeLaunch::kernels, gpu::DecodeLaunch::graph}) {
    SCOPED_TRACE(launch == gpu::DecodeLaunch::graph ? "graph" : "kernels");
    Vec cpu_params = m.params;
    BasicFlatUnitAccess<double> cpu_access(m.layout, cpu_params.data(), nullptr);
    BasicLlama<double> cpu(m.layout, 1, 1);
    auto access = m.device.access();
    const auto decoder =
        gpu::make_device_decoder<F>(m.layout, kT, m.device.stream(), m.device.blas(), launch);
    std::vector<float> row(kV);
    for (const int b : {0, 1}) {
      decoder->reset();
      const auto* first = this->inputs_.data() + static_cast<std::ptrdiff_t>(b * kT);
      for (int t = 0; t < kT; ++t) {
        const std::int32_t token = first[t];
        if (t == 2) {
          decoder->feed_token(access, token, {});
          continue;
        }
        decoder->feed_token(access, token, row);
        const auto full = cpu.next_token_logits(
            cpu_access, std::span<const std::int32_t>(first, static_cast<std::size_t>(t + 1)));
        autotrain::testing::expect_close_tensor<F>(
            Vec(row.begin(), row.end()), Vec(full.begin(), full.begin() + kV), 0, kV,
            std::string(tied ? "tied" : "untied") + " decoder logits of sequence " +
                std::to_string(b) + ", position " + std::to_string(t));
      }
      EXPECT_EQ(decoder->length(), kT);
    }
    // A prompt's way: several rows a step (3 from position 0, one token, 4 after the cached ones).
    for (const int b : {0, 1}) {
      decoder->reset();
      const auto tokens =
          std::span<const std::int32_t>(this->inputs_)
              .subspan(static_cast<std::size_t>(b * kT), static_cast<std::size_t>(kT));
      const auto expect_at = [&](int t) {
        const auto full =
            cpu.next_token_logits(cpu_access, tokens.first(static_cast<std::size_t>(t + 1)));
        autotrain::testing::expect_close_tensor<F>(
            Vec(row.begin(), row.end()), Vec(full.begin(), full.begin() + kV), 0, kV,
            std::string(tied ? "tied" : "untied") + " decoder logits of sequence " +
                std::to_string(b) + " fed several rows a step, position " + std::to_string(t));
      };
      decoder->feed_tokens(access, tokens.first(3), row);
      expect_at(2);
      decoder->feed_token(access, tokens[3], row);
      expect_at(3);
      decoder->feed_tokens(access, tokens.subspan(4), row);
      expect_at(kT - 1);
      EXPECT_EQ(decoder->length(), kT);
    }
    const std::string full = error_of([&] { decoder->feed_token(access, 0, row); });
    EXPECT_NE(full.find("holds 8 positions, 8 of them fed already: no room for 1 more"),
              std::string::npos)
        << full;
    decoder->reset();
    const std::string bad = error_of([&] { decoder->feed_token(access, kV, row); });
    EXPECT_NE(bad.find("token 50 is not a token id"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace autotrain::model::gpu_llama_test

#endif  // AUTOTRAIN_HAVE_CUDA
