// DeviceGpt2<F> against the CPU model BasicGpt2<double> on the same parameters (rounded first to
// F) and the same batch: loss, per-position losses and the gradient of every tensor element
// (the padded vocabulary rows and unit padding excluded; those must stay exactly zero).
// Shape: L = 2, NH = 4, C = 64 (HS = 16), V = 50 padded to Vp = 64, block 16, B = 2, T = 8.
//
// Tolerances per element type: device_model_test_support.hpp. Activation checkpointing
// (`recompute`) must give the same bits as keeping every activation.
//
// Every test needs a device: they skip with a message in builds without CUDA and on machines
// without a GPU.
#include <gtest/gtest.h>

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(GpuGpt2, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): the device model is "
                  "not tested";
}

#else

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/gpu/decoder.hpp"
#include "autotrain/model/gpu/gpt2.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"
#include "device_model_test_support.hpp"
#include "gpu/element_types.hpp"
#include "test_support.hpp"

namespace autotrain::model::gpu_gpt2_test {
namespace {

using autotrain::testing::error_of;
using testing::Precision;
using testing::RecordingAccess;
using testing::Vec;

namespace kg = autotrain::kernels::gpu;

constexpr int kB = 2;
constexpr int kT = 8;
constexpr int kV = 50;
constexpr int kC = 64;
constexpr std::size_t kBT = static_cast<std::size_t>(kB) * kT;
// Scales the loss as fp16 training does; the CPU model gets the same factor.
constexpr float kLossScale = 8.0f;

ModelConfig tiny_config() {
  ModelConfig config;
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = kC;
  config.block_size = 16;
  config.vocab_size = kV;
  config.padded_vocab_size = 64;
  config.validate();
  return config;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<std::int32_t> dist(0, kV - 1);
  std::vector<std::int32_t> tokens(n);
  for (auto& t : tokens) t = dist(gen);
  return tokens;
}

// Elements of a tensor that hold real parameters: wte's rows >= vocab_size are padding.
std::size_t real_elements(const ParamTensor& t) {
  return t.name == "transformer.wte.weight" ? static_cast<std::size_t>(kV) * kC : t.numel;
}

// GPT-2's initialisation plus noise on every real element, so biases and LayerNorm parameters are
// not 0 and 1 and every path carries a gradient; rounded to F so both models see the same values.
template <typename F>
Vec rounded_params(const ParamLayout& layout) {
  std::vector<float> init(layout.padded_size());
  init_params(layout, 7, init);
  Vec params(init.begin(), init.end());
  std::mt19937 gen(3);
  std::normal_distribution<double> noise(0.0, 0.05);
  for (const auto& t : layout.tensors()) {
    for (std::size_t i = 0; i < real_elements(t); ++i) params[t.offset + i] += noise(gen);
  }
  for (auto& x : params) x = Precision<F>::decode(Precision<F>::encode(x));
  return params;
}

template <typename F>
class GpuGpt2Test : public ::testing::Test {
 protected:
  using Bits = typename Precision<F>::Bits;

  void SetUp() override {
    if (autotrain::gpu::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none, the device model is not "
                      "tested";
    }
    stream_.emplace();
    blas_.emplace();
    params_ = rounded_params<F>(layout_);
    std::vector<Bits> bits(params_.size());
    for (std::size_t i = 0; i < params_.size(); ++i) bits[i] = Precision<F>::encode(params_[i]);
    d_params_ = autotrain::gpu::DeviceBuffer(bits.size() * sizeof(F));
    d_params_.copy_from_host(bits.data(), bits.size() * sizeof(F));
    d_grads_ = autotrain::gpu::DeviceBuffer(bits.size() * sizeof(F));
    d_grads_.zero(stream());
    sync();
  }

  cudaStream_t stream() const { return stream_->get(); }
  void sync() const { stream_->synchronize(); }
  const kg::BlasHandle& blas() const { return *blas_; }
  BasicFlatUnitAccess<F> device_access() {
    return BasicFlatUnitAccess<F>(layout_, d_params_.as<F>(), d_grads_.as<F>());
  }
  // DecoderMatchesTheCpuModelsKeyValueCacheTokenByToken with one way of launching.
  void expect_decoder_matches_the_cpu(gpu::DecodeLaunch launch);

  void zero_grads() {
    d_grads_.zero(stream());
    sync();
  }
  // The gradient buffer after the queued work is done, as F's bits.
  std::vector<Bits> download_grad_bits() const {
    sync();
    std::vector<Bits> bits(params_.size());
    d_grads_.copy_to_host(bits.data(), bits.size() * sizeof(F));
    return bits;
  }
  // The same, decoded to double.
  Vec download_grads() const {
    const std::vector<Bits> bits = download_grad_bits();
    Vec grads(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) grads[i] = Precision<F>::decode(bits[i]);
    return grads;
  }

  // |gpu - cpu| per element and as a tensor (device_model_test_support.hpp).
  void expect_close_tensor(const Vec& gpu, const Vec& cpu, std::size_t offset, std::size_t count,
                           const std::string& what) const {
    testing::expect_close_tensor<F>(gpu, cpu, offset, count, what);
  }

  const ParamLayout layout_{tiny_config()};
  const std::vector<std::int32_t> inputs_ = random_tokens(kBT, 11);
  const std::vector<std::int32_t> targets_ = random_tokens(kBT, 12);
  Vec params_;  // host copy, already rounded to F

 private:
  std::optional<autotrain::gpu::Stream> stream_;
  std::optional<kg::BlasHandle> blas_;
  autotrain::gpu::DeviceBuffer d_params_;
  autotrain::gpu::DeviceBuffer d_grads_;
};

TYPED_TEST_SUITE(GpuGpt2Test, autotrain::testing::GpuElementTypes,
                 autotrain::testing::GpuTypeNames);

TYPED_TEST(GpuGpt2Test, LossAndEveryGradientMatchTheCpuModelInDouble) {
  using F = TypeParam;
  const ParamLayout& layout = this->layout_;
  std::vector<double> cpu_params = this->params_;
  Vec cpu_grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> cpu_access(layout, cpu_params.data(), cpu_grads.data());
  BasicGpt2<double> cpu(layout, kB, kT);
  const double cpu_loss = cpu.forward(cpu_access, this->inputs_.data(), this->targets_.data());
  cpu.backward(cpu_access, kLossScale);

  auto access = this->device_access();
  gpu::DeviceGpt2<F> model(layout, kB, kT, this->stream(), this->blas());
  const float loss = model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, kLossScale);
  const Vec grads = this->download_grads();

  EXPECT_NEAR(loss, cpu_loss, Precision<F>::loss_rtol * std::abs(cpu_loss));
  const auto losses = model.losses();
  const auto cpu_losses = cpu.losses();
  ASSERT_EQ(losses.size(), kBT);
  for (std::size_t i = 0; i < kBT; ++i) {
    EXPECT_NEAR(losses[i], cpu_losses[i], Precision<F>::loss_rtol * std::abs(cpu_losses[i]) + 1e-6)
        << "loss of position " << i;
  }

  std::vector<bool> real(layout.padded_size(), false);
  for (const auto& t : layout.tensors()) {
    this->expect_close_tensor(grads, cpu_grads, t.offset, real_elements(t), t.name);
    std::fill_n(real.begin() + static_cast<std::ptrdiff_t>(t.offset), real_elements(t), true);
  }
  for (std::size_t i = 0; i < real.size(); ++i) {
    if (!real[i]) {
      ASSERT_EQ(grads[i], 0.0) << "padding element " << i << " of the flat gradient was written";
    }
  }
}

// The score head (a reward model) on GPT-2's device model: the marked positions' scores and the
// gradient of their weighted sum (a pair's chosen and rejected), as the CPU's in double.
TYPED_TEST(GpuGpt2Test, ScoreHeadMatchesTheCpuModelInDouble) {
  using F = TypeParam;
  ModelConfig config = tiny_config();
  config.score_head = true;
  const ParamLayout layout(config);
  const Vec params = rounded_params<F>(layout);
  std::vector<std::int32_t> marks(kBT, kIgnoreTarget);
  std::vector<float> weights(kBT, 0.0f);
  marks[kT - 3] = 4;  // row 0's last real token, padding after it
  weights[kT - 3] = 0.7f;
  marks[kBT - 1] = 0;
  weights[kBT - 1] = -0.4f;

  Vec cpu_params = params, cpu_grads(layout.padded_size(), 0.0);
  BasicFlatUnitAccess<double> cpu_access(layout, cpu_params.data(), cpu_grads.data());
  BasicGpt2<double> cpu(layout, kB, kT);
  cpu.forward(cpu_access, this->inputs_.data(), marks.data());
  cpu.backward_weighted(cpu_access, kLossScale,
                        std::vector<double>(weights.begin(), weights.end()));

  testing::DeviceState<F> device(layout, params);
  auto access = device.access();
  gpu::DeviceGpt2<F> model(layout, kB, kT, device.stream(), device.blas());
  model.forward(access, this->inputs_.data(), marks.data());
  model.backward_weighted(access, kLossScale, weights);
  const Vec grads = device.grads();

  // Scores of either sign: their error is a share of the largest.
  double scale = 0;
  for (const double score : cpu.losses()) scale = std::max(scale, std::abs(score));
  for (std::size_t i = 0; i < kBT; ++i) {
    EXPECT_NEAR(model.losses()[i], cpu.losses()[i], Precision<F>::loss_rtol * scale + 1e-7)
        << "score of position " << i;
  }
  for (const auto& t : layout.tensors()) {
    this->expect_close_tensor(grads, cpu_grads, t.offset, real_elements(t), t.name);
  }
}

TYPED_TEST(GpuGpt2Test, GradientsAccumulateAcrossTwoBackwardPasses) {
  using F = TypeParam;
  auto access = this->device_access();
  gpu::DeviceGpt2<F> model(this->layout_, kB, kT, this->stream(), this->blas());
  const float first_loss = model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, kLossScale);
  const Vec once = this->download_grads();
  const float second_loss = model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, kLossScale);
  const Vec twice = this->download_grads();

  EXPECT_FLOAT_EQ(first_loss, second_loss) << "the forward pass must not depend on the gradients";
  Vec doubled(once.size());
  for (std::size_t i = 0; i < once.size(); ++i) doubled[i] = 2 * once[i];
  for (const auto& t : this->layout_.tensors()) {
    this->expect_close_tensor(twice, doubled, t.offset, real_elements(t), t.name + " (2 passes)");
  }
}

TYPED_TEST(GpuGpt2Test, CallsTheUnitHooksInTheCpuModelsOrder) {
  using F = TypeParam;
  std::vector<double> cpu_params = this->params_;
  Vec cpu_grads(this->layout_.padded_size(), 0.0);
  BasicFlatUnitAccess<double> cpu_flat(this->layout_, cpu_params.data(), cpu_grads.data());
  std::vector<std::string> cpu_events;
  RecordingAccess<double> cpu_access(cpu_flat, cpu_events);
  BasicGpt2<double> cpu(this->layout_, kB, kT);
  cpu.forward(cpu_access, this->inputs_.data(), this->targets_.data());
  cpu.backward(cpu_access, 1.0);

  auto flat = this->device_access();
  std::vector<std::string> events;
  RecordingAccess<F> access(flat, events);
  gpu::DeviceGpt2<F> model(this->layout_, kB, kT, this->stream(), this->blas());
  model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, 1.0f);
  this->sync();

  ASSERT_FALSE(cpu_events.empty());
  EXPECT_EQ(events, cpu_events);
}

// What the memory plan counts on a GPU (planned_activation_bytes, computed on the host) is what the
// model allocates, in every recompute mode, for one sequence and three.
TYPED_TEST(GpuGpt2Test, PlannedActivationBytesAreWhatTheModelAllocates) {
  using F = TypeParam;
  for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    for (const int B : {1, 3}) {
      gpu::DeviceGpt2<F> model(this->layout_, B, kT, this->stream(), this->blas(), mode);
      EXPECT_EQ(gpu::planned_activation_bytes<F>(this->layout_, B, kT, mode),
                model.activation_bytes())
          << recompute_name(mode) << " B=" << B;
    }
  }
}

// Activation checkpointing, selective and full: two micro-steps (the second forward overwrites
// what the first backward's recomputation left in the slots) give the same losses and gradients
// to the bit as keeping every activation, in less activation memory (full the least). In fp32
// selective recomputes the GELU too; in 16 bits, where cuBLASLt's epilogue may compute it, it
// keeps it.
// Real GPU only: that cuBLASLt and cuBLAS give the same bits from one call of a shape to the next
// (the emulator computes every product one way).
TYPED_TEST(GpuGpt2Test, RecomputeGivesTheSameBitsAsKeepingEveryActivation) {
  using F = TypeParam;
  struct Outcome {
    std::vector<float> losses;  // each step's mean, then its per-position losses
    std::vector<typename Precision<F>::Bits> grads;
    std::size_t activation_bytes = 0;
  };
  const auto train = [&](Recompute recompute) {
    this->zero_grads();
    auto access = this->device_access();
    gpu::DeviceGpt2<F> model(this->layout_, kB, kT, this->stream(), this->blas(), recompute);
    Outcome run;
    for (std::uint32_t step = 0; step < 2; ++step) {
      const auto inputs = random_tokens(kBT, 31 + step), targets = random_tokens(kBT, 41 + step);
      run.losses.push_back(model.forward(access, inputs.data(), targets.data()));
      const auto losses = model.losses();
      run.losses.insert(run.losses.end(), losses.begin(), losses.end());
      model.backward(access, kLossScale);
    }
    run.grads = this->download_grad_bits();
    run.activation_bytes = model.activation_bytes();
    return run;
  };
  const Outcome kept = train(Recompute::none);
  std::size_t previous_bytes = kept.activation_bytes;
  for (const Recompute mode : {Recompute::selective, Recompute::full}) {
    SCOPED_TRACE(recompute_name(mode));
    const Outcome recomputed = train(mode);
    EXPECT_TRUE(autotrain::testing::same_bits(kept.losses, recomputed.losses));
    EXPECT_TRUE(autotrain::testing::same_bits(kept.grads, recomputed.grads));
    EXPECT_LT(recomputed.activation_bytes, previous_bytes);
    previous_bytes = recomputed.activation_bytes;
  }
}

// The profile has the CPU model's rows; every kernel kind the step runs has time in the
// direction it runs in (the residual's backward is folded into the layers', as on the CPU; the
// GELU is timed with its matmul, which may run it in cuBLASLt's epilogue), and
// a model that is not profiling reports zeros.
TYPED_TEST(GpuGpt2Test, ProfileTimesEveryKernelKindOfAStepWithTheCpuModelsRows) {
  using F = TypeParam;
  auto access = this->device_access();
  gpu::DeviceGpt2<F> model(this->layout_, kB, kT, this->stream(), this->blas());
  model.set_profiling(true);
  model.forward(access, this->inputs_.data(), this->targets_.data());
  model.backward(access, 1.0f);
  const auto rows = model.profile();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kOpCount));
  for (int op = 0; op < kOpCount; ++op) {
    const auto& row = rows[static_cast<std::size_t>(op)];
    EXPECT_EQ(row.name, profile_op_name(op, ModelConfig{}));
    if (op ==
        kActivation) {  // the device times the MLP's GELU with its matmul (matmul_gelu_forward)
      EXPECT_EQ(row.forward_s + row.backward_s, 0.0);
      continue;
    }
    EXPECT_GT(row.forward_s, 0.0) << row.name;
    if (op != kResidual) {
      EXPECT_GT(row.backward_s, 0.0) << row.name;
    }
  }
  model.set_profiling(false);
  model.forward(access, this->inputs_.data(), this->targets_.data());
  for (const auto& row : model.profile()) EXPECT_EQ(row.forward_s + row.backward_s, 0.0);
}

TYPED_TEST(GpuGpt2Test, RejectsBadTokenIdsAndBackwardWithoutForwardNamingTheProblem) {
  using F = TypeParam;
  auto access = this->device_access();
  gpu::DeviceGpt2<F> model(this->layout_, kB, kT, this->stream(), this->blas());

  auto inputs = this->inputs_;
  inputs[3] = kV;
  const std::string bad_input =
      error_of([&] { model.forward(access, inputs.data(), this->targets_.data()); });
  EXPECT_NE(bad_input.find("inputs[3] = 50"), std::string::npos) << bad_input;
  EXPECT_NE(bad_input.find("vocab_size = 50"), std::string::npos) << bad_input;

  auto targets = this->targets_;
  targets[5] = -2;  // -1 is kIgnoreTarget (no loss)
  const std::string bad_target =
      error_of([&] { model.forward(access, this->inputs_.data(), targets.data()); });
  EXPECT_NE(bad_target.find("targets[5] = -2"), std::string::npos) << bad_target;

  const std::string early = error_of([&] { model.backward(access, 1.0f); });
  EXPECT_NE(early.find("needs a forward()"), std::string::npos) << early;

  const std::string too_long =
      error_of([&] { gpu::DeviceGpt2<F>(this->layout_, kB, 17, this->stream(), this->blas()); });
  EXPECT_NE(too_long.find("sequence length 17"), std::string::npos) << too_long;

  ModelConfig wide = tiny_config();  // 33 heads of 64: wider than the CUDA LayerNorm's 2048
  wide.n_layer = 1;
  wide.n_head = 33;
  wide.n_embd = 33 * 64;
  wide.validate();
  const ParamLayout wide_layout(wide);
  const std::string too_wide =
      error_of([&] { gpu::DeviceGpt2<F>(wide_layout, kB, kT, this->stream(), this->blas()); });
  EXPECT_NE(too_wide.find("n_embd = 2112 is wider than the 2048"), std::string::npos) << too_wide;
}

// generate's path: the decoder's logits after each token of a sequence against the CPU model's
// key/value cache in double, in two passes (the second after a reset); one token asks for no
// logits, as a prompt's tokens before its last do. Then the same sequences fed as a prompt would
// be, several rows a step (feed_tokens: 3 rows from position 0, one token, 4 rows after the
// cached ones). Then a full cache and a bad token are refused. Launched kernel by kernel and as
// CUDA graphs (captured at the second step of each kind: with logits in the first pass, without
// in the second).
TYPED_TEST(GpuGpt2Test, DecoderMatchesTheCpuModelsKeyValueCacheTokenByToken) {
  for (const auto launch : {gpu::DecodeLaunch::kernels, gpu::DecodeLaunch::graph}) {
    SCOPED_TRACE(launch == gpu::DecodeLaunch::graph ? "graph" : "kernels");
    this->expect_decoder_matches_the_cpu(launch);
  }
}

template <typename F>
void GpuGpt2Test<F>::expect_decoder_matches_the_cpu(gpu::DecodeLaunch launch) {
  std::vector<double> cpu_params = this->params_;
  BasicFlatUnitAccess<double> cpu_access(this->layout_, cpu_params.data(), nullptr);
  BasicGpt2<double> cpu(this->layout_, 1, 1);
  auto access = this->device_access();
  gpu::DeviceGpt2Decoder<F> decoder(this->layout_, kT, this->stream(), this->blas(), launch);
  std::vector<float> row(kV);
  std::vector<Vec> expected(static_cast<std::size_t>(2 * kT));  // [b, t] the CPU's logits
  for (const int b : {0, 1}) {
    decoder.reset();
    cpu.reset_cache();
    for (int t = 0; t < kT; ++t) {
      const std::int32_t token = this->inputs_[static_cast<std::size_t>(b * kT + t)];
      const auto cpu_logits = cpu.feed_token(cpu_access, token);
      expected[static_cast<std::size_t>(b * kT + t)] =
          Vec(cpu_logits.begin(), cpu_logits.begin() + kV);
      if (t == 2) {
        decoder.feed_token(access, token, {});
        continue;
      }
      decoder.feed_token(access, token, row);
      this->expect_close_tensor(
          Vec(row.begin(), row.end()), Vec(cpu_logits.begin(), cpu_logits.begin() + kV), 0, kV,
          "decoder logits of sequence " + std::to_string(b) + ", position " + std::to_string(t));
    }
    EXPECT_EQ(decoder.length(), kT);
  }
  for (const int b : {0, 1}) {
    decoder.reset();
    const auto tokens =
        std::span<const std::int32_t>(this->inputs_)
            .subspan(static_cast<std::size_t>(b * kT), static_cast<std::size_t>(kT));
    const auto expect_at = [&](int t) {
      this->expect_close_tensor(Vec(row.begin(), row.end()),
                                expected[static_cast<std::size_t>(b * kT + t)], 0, kV,
                                "decoder logits of sequence " + std::to_string(b) +
                                    " fed several rows a step, position " + std::to_string(t));
    };
    decoder.feed_tokens(access, tokens.first(3), row);
    expect_at(2);
    decoder.feed_token(access, tokens[3], row);
    expect_at(3);
    decoder.feed_tokens(access, tokens.subspan(4), row);
    expect_at(kT - 1);
  }
  const std::string full = error_of([&] { decoder.feed_token(access, 0, row); });
  EXPECT_NE(full.find("holds 8 positions, 8 of them fed already: no room for 1 more"),
            std::string::npos)
      << full;
  decoder.reset();
  const std::string bad = error_of([&] { decoder.feed_token(access, kV, row); });
  EXPECT_NE(bad.find("token 50 is not a token id"), std::string::npos) << bad;
}

}  // namespace
}  // namespace autotrain::model::gpu_gpt2_test

#endif  // AUTOTRAIN_HAVE_CUDA
