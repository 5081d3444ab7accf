// `autotrain generate` on a tiny random model (L = 2, NH = 4, C = 64, block 16, the byte
// tokenizer's V = 256): the CPU path against the model's full forward over each window, the
// device choice, and the GPU path against the CPU path (GPT-2, and a Llama-family model). Greedy
// runs of 40 new tokens after a 5-token prompt cross block_size three times, so the window restarts
// are covered.
//
// The GPU tests need a device: they skip with the reason in builds without CUDA and on machines
// without a GPU (the emulated build runs them).
#include "autotrain/train/generate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/model/gpt2.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"

#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/core/gpu/device.hpp"
#include "test_support.hpp"
#endif

namespace autotrain::train::generate_test {
namespace {

using autotrain::testing::error_of;

constexpr int kBlock = 16;
constexpr int kNewTokens = 40;
const std::string kPrompt = "hello";

// GPT-2's initialisation plus noise on every element, so biases and LayerNorm parameters are not
// 0 and 1 and the logits are far enough apart that rounding does not reorder the largest.
LoadedModel tiny_model() {
  LoadedModel loaded;
  loaded.tokenizer = data::make_tokenizer("byte", {});
  loaded.layout = std::make_unique<model::ParamLayout>(
      model::ModelConfig::gpt2(2, 4, 64, kBlock, loaded.tokenizer->vocab_size()), 1);
  loaded.params.assign(loaded.layout->padded_size(), 0.0f);
  model::init_params(*loaded.layout, 7, loaded.params);
  std::mt19937 gen(3);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  for (const auto& tensor : loaded.layout->tensors()) {
    const bool wte = tensor.name == "transformer.wte.weight";
    const std::size_t real = wte ? std::size_t(loaded.tokenizer->vocab_size()) * 64 : tensor.numel;
    for (std::size_t i = 0; i < real; ++i) loaded.params[tensor.offset + i] += noise(gen);
  }
  return loaded;
}

// A Llama-family model of the same size on the byte vocabulary, with the options the device
// decoder takes apart: grouped key/value heads, head_dim 2·C/NH, q/k/v biases, q/k norms, an
// untied head.
LoadedModel tiny_llama_model() {
  LoadedModel loaded;
  loaded.tokenizer = data::make_tokenizer("byte", {});
  model::ModelConfig c = model::ModelConfig::gpt2(2, 4, 64, kBlock, loaded.tokenizer->vocab_size());
  c.family = model::Family::llama;
  c.architecture = "Qwen3ForCausalLM";
  c.n_kv_head = 2;
  c.head_dim = 32;
  c.intermediate_size = 128;
  c.tie_word_embeddings = false;
  c.qkv_bias = true;
  c.qk_norm = true;
  loaded.layout = std::make_unique<model::ParamLayout>(c, 1);
  loaded.params.assign(loaded.layout->padded_size(), 0.0f);
  model::init_params(*loaded.layout, 7, loaded.params);
  std::mt19937 gen(5);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  for (const auto& tensor : loaded.layout->tensors()) {
    for (std::size_t i = 0; i < tensor.file_numel(); ++i) {
      loaded.params[tensor.offset + i] += noise(gen);
    }
  }
  return loaded;
}

GenerateOptions greedy(Device device, Precision precision) {
  GenerateOptions options;
  options.prompt = kPrompt;
  options.max_new_tokens = kNewTokens;
  options.temperature = 0;
  options.device = device;
  options.precision = precision;
  return options;
}

// The reference: the full forward (next_token_logits) over each window, the window restarting
// from the last half of the context when it would grow past block_size, argmax each time.
TEST(Generate, GreedyCpuEqualsTheFullForwardOverEachWindow) {
  const LoadedModel loaded = tiny_model();
  const int vocab = loaded.tokenizer->vocab_size();
  model::Gpt2Model model(*loaded.layout, 1, 1);
  model::FlatUnitAccess access(*loaded.layout, loaded.params.data(), nullptr);
  std::vector<std::int32_t> tokens = loaded.tokenizer->encode(kPrompt);
  std::size_t start = 0;
  std::string expected;
  for (int i = 0; i < kNewTokens; ++i) {
    const auto logits = model.next_token_logits(
        access, std::span<const std::int32_t>(tokens.data() + start, tokens.size() - start));
    const int next =
        static_cast<int>(std::max_element(logits.begin(), logits.begin() + vocab) - logits.begin());
    if (next == loaded.tokenizer->eot_token()) break;
    tokens.push_back(next);
    if (tokens.size() - start > std::size_t(kBlock)) start = tokens.size() - kBlock / 2;
  }
  expected = loaded.tokenizer->decode(
      std::vector<std::int32_t>(tokens.begin() + static_cast<long>(kPrompt.size()), tokens.end()));
  ASSERT_EQ(expected.size(), std::size_t(kNewTokens))
      << "the tiny model stopped at end-of-text; the windows are not covered";
  EXPECT_EQ(generate_text(loaded, greedy(Device::cpu, Precision::fp32)), expected);
}

TEST(Generate, SaysWhenTheModelEndedTheTextAtTheEndOfTextToken) {
  LoadedModel loaded = tiny_model();
  // The final LayerNorm gives all ones whatever the input, so logit v is the sum of wte row v:
  // row 0 (the byte tokenizer's end-of-text) wins at once.
  for (const auto& tensor : loaded.layout->tensors()) {
    auto values = std::span(loaded.params).subspan(tensor.offset, tensor.numel);
    if (tensor.name == "transformer.ln_f.weight") std::fill(values.begin(), values.end(), 0.0f);
    if (tensor.name == "transformer.ln_f.bias") std::fill(values.begin(), values.end(), 1.0f);
    if (tensor.name == "transformer.wte.weight")
      std::fill(values.begin(), values.begin() + 64, 1.0f);
  }
  const Generated generated = generate(loaded, greedy(Device::cpu, Precision::fp32));
  EXPECT_TRUE(generated.stopped_at_end);
  EXPECT_EQ(generated.new_tokens, 0);
  EXPECT_EQ(generated.text, "");
  const Generated plain = generate(tiny_model(), greedy(Device::cpu, Precision::fp32));
  EXPECT_FALSE(plain.stopped_at_end);
  EXPECT_EQ(plain.new_tokens, kNewTokens);
}

TEST(Generate, RejectsUnknownDeviceAndPrecisionNamingTheOption) {
  const std::string device = error_of([] { choose_generate_device("gpu", "no"); });
  EXPECT_NE(device.find("--device 'gpu'"), std::string::npos) << device;
  const std::string precision = error_of([] { choose_generate_device("cpu", "fp8"); });
  EXPECT_NE(precision.find("--mixed-precision 'fp8'"), std::string::npos) << precision;
}

TEST(Generate, TheCpuComputesBf16WhereNativeAndSaysWhyNotElsewhere) {
  const GenerateDevice where = choose_generate_device("cpu", "bf16");
  EXPECT_EQ(where.device, Device::cpu);
  if (kernels::cpu_has_native_bf16()) {
    EXPECT_EQ(where.precision, Precision::bf16);
    EXPECT_NE(where.summary.find("on the CPU in bf16 (" + kernels::cpu_gemm_isa() + ")"),
              std::string::npos)
        << where.summary;
  } else {
    EXPECT_EQ(where.precision, Precision::fp32);
    EXPECT_NE(where.summary.find("on the CPU in fp32"), std::string::npos) << where.summary;
    EXPECT_NE(
        where.summary.find("this CPU has no native bf16, oneDNN found " + kernels::cpu_gemm_isa()),
        std::string::npos)
        << where.summary;
  }
  const GenerateDevice fp16 = choose_generate_device("cpu", "fp16");
  EXPECT_EQ(fp16.precision, Precision::fp32);
  EXPECT_NE(fp16.summary.find("fp16 runs on GPUs only"), std::string::npos) << fp16.summary;
}

TEST(Generate, Bf16OnTheCpuGeneratesAsManyTokensAndRestoresFp32) {
  if (!kernels::cpu_has_native_bf16()) {
    GTEST_SKIP() << "this CPU has no native bf16 (oneDNN found " << kernels::cpu_gemm_isa() << ")";
  }
  const Generated fp32 = generate(tiny_model(), greedy(Device::cpu, Precision::fp32));
  const Generated bf16 = generate(tiny_model(), greedy(Device::cpu, Precision::bf16));
  ASSERT_EQ(bf16.new_tokens, fp32.new_tokens);
  EXPECT_EQ(kernels::gemm_precision(), kernels::GemmPrecision::fp32);  // restored after the call
}

#ifndef AUTOTRAIN_HAVE_CUDA

TEST(Generate, CudaInABuildWithoutCudaSaysSo) {
  const std::string error = error_of([] { choose_generate_device("cuda", "no"); });
  EXPECT_NE(error.find("this build has no CUDA"), std::string::npos) << error;
  EXPECT_EQ(choose_generate_device("auto", "bf16").device, Device::cpu);
}

TEST(GpuGenerate, SkippedBecauseTheBuildHasNoCuda) {
  GTEST_SKIP() << "this build has no CUDA (AUTOTRAIN_CUDA=off or no toolkit): generate on the GPU "
                  "is not tested";
}

#else

class GpuGenerate : public ::testing::Test {
 protected:
  void SetUp() override {
    if (autotrain::gpu::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount reports none, generate on the GPU is "
                      "not tested";
    }
  }
  const LoadedModel loaded_ = tiny_model();
};

TEST_F(GpuGenerate, AutoAndCudaPickTheGpuInTheAskedPrecision) {
  for (const char* device : {"auto", "cuda"}) {
    const GenerateDevice where = choose_generate_device(device, "bf16");
    EXPECT_EQ(where.device, Device::cuda) << device;
    EXPECT_EQ(where.precision, Precision::bf16) << device;
    EXPECT_NE(where.summary.find("generate: on cuda:0 ("), std::string::npos) << where.summary;
    EXPECT_NE(where.summary.find(") in bf16"), std::string::npos) << where.summary;
  }
  EXPECT_EQ(choose_generate_device("cpu", "no").device, Device::cpu);
}

TEST_F(GpuGenerate, GreedyFp32EqualsTheCpuAcrossWindowRestarts) {
  const std::string cpu = generate_text(loaded_, greedy(Device::cpu, Precision::fp32));
  ASSERT_EQ(cpu.size(), std::size_t(kNewTokens))
      << "the tiny model stopped at end-of-text; the windows are not covered";
  EXPECT_EQ(generate_text(loaded_, greedy(Device::cuda, Precision::fp32)), cpu);
}

// The Llama family's decoder (DeviceLlamaDecoder, picked by the layout's family) against the
// CPU's key/value cache, across the same window restarts.
TEST_F(GpuGenerate, LlamaFamilyGreedyFp32EqualsTheCpuAcrossWindowRestarts) {
  const LoadedModel llama = tiny_llama_model();
  const Generated cpu = generate(llama, greedy(Device::cpu, Precision::fp32));
  ASSERT_EQ(cpu.new_tokens, kNewTokens)
      << "the tiny model stopped at end-of-text; the windows are not covered";
  EXPECT_EQ(generate(llama, greedy(Device::cuda, Precision::fp32)).text, cpu.text);
  EXPECT_GT(generate(llama, greedy(Device::cuda, Precision::bf16)).new_tokens, 0);
}

// bf16 and fp16 round the parameters and activations, so the greedy text may part from the
// CPU's. NaN logits would make the argmax token 0, the byte tokenizer's end-of-text, and stop at
// once; a seeded sampled run repeats.
TEST_F(GpuGenerate, SixteenBitRunsGiveValidTokensAndRepeat) {
  for (const Precision precision : {Precision::bf16, Precision::fp16}) {
    const std::string text = generate_text(loaded_, greedy(Device::cuda, precision));
    EXPECT_GT(text.size(), 0u) << precision_name(precision);
    EXPECT_LE(text.size(), std::size_t(kNewTokens)) << precision_name(precision);
    GenerateOptions sampled = greedy(Device::cuda, precision);
    sampled.temperature = 1.0;
    sampled.top_k = 20;
    sampled.max_new_tokens = 12;
    EXPECT_EQ(generate_text(loaded_, sampled), generate_text(loaded_, sampled))
        << precision_name(precision);
  }
}

#endif  // AUTOTRAIN_HAVE_CUDA

}  // namespace
}  // namespace autotrain::train::generate_test
