// LoRA's adapter dropout (model/lora_dropout.hpp): the masks, one linear against PyTorch given
// the same mask, and through both families' CPU models (model/lora_access.hpp): gradients against
// central differences, the same bits with and without activation checkpointing, and dropout 0
// or evaluation giving exactly LoRA without dropout.
#include "autotrain/model/lora_dropout.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "autotrain/kernels/matmul.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/init.hpp"
#include "autotrain/model/lora.hpp"
#include "autotrain/model/lora_access.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace autotrain::model::lora_dropout_test {
namespace {

TEST(DropoutMask, KeepsOneMinusPOfTheElementsAndDependsOnlyOnTheGlobalRow) {
  const double p = 0.3;
  const DropoutRows rows{42, 7, 0};
  const DropoutMask mask(p, rows, 5);
  std::size_t kept = 0;
  const std::size_t n_rows = 200, columns = 100;
  for (std::size_t i = 0; i < n_rows; ++i) {
    for (std::size_t j = 0; j < columns; ++j) kept += mask.kept(i, j) ? 1 : 0;
  }
  EXPECT_NEAR(double(kept) / double(n_rows * columns), 1 - p, 0.01);
  // A micro-batch that starts 64 rows later (another rank, or another micro-step) draws the
  // global rows' masks: the same ones.
  const DropoutMask later(p, DropoutRows{42, 7, 64}, 5);
  for (std::size_t j = 0; j < columns; ++j) EXPECT_EQ(later.kept(0, j), mask.kept(64, j)) << j;
  // Another module, step or seed draws another mask.
  const auto differs = [&](const DropoutMask& other) {
    std::size_t different = 0;
    for (std::size_t j = 0; j < columns; ++j) different += other.kept(3, j) != mask.kept(3, j);
    return different;
  };
  EXPECT_GT(differs(DropoutMask(p, rows, 6)), 10u);
  EXPECT_GT(differs(DropoutMask(p, DropoutRows{42, 8, 0}, 5)), 10u);
  EXPECT_GT(differs(DropoutMask(p, DropoutRows{43, 7, 0}, 5)), 10u);
  // The factors of δ = dropout(x) − x.
  EXPECT_DOUBLE_EQ(mask.factor(3, 1), mask.kept(3, 1) ? p / (1 - p) : -1.0);
  EXPECT_FALSE(DropoutMask(1.0, rows, 5).kept(0, 0));
  EXPECT_EQ(DropoutMask(1.0, rows, 5).factor(0, 0), -1.0);
  EXPECT_TRUE(DropoutMask(0.0, rows, 5).kept(0, 0));
}

void write_doubles(const std::filesystem::path& path, const std::vector<double>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(double)));
}

std::vector<double> read_doubles(const std::filesystem::path& path, std::size_t n) {
  std::vector<double> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(n * sizeof(double)));
  EXPECT_TRUE(in.good()) << path;
  return values;
}

void expect_near(const std::vector<double>& ours, const std::vector<double>& torch,
                 const std::string& what) {
  ASSERT_EQ(ours.size(), torch.size()) << what;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    ASSERT_NEAR(ours[i], torch[i], 1e-12 * (1 + std::fabs(torch[i]))) << what << " [" << i << "]";
  }
}

// y = x · (W + s · B · A)ᵀ + b and its backward, as the models run a merged linear, plus the
// dropout correction; against PEFT's Linear in PyTorch with the mask drawn here.
TEST(LoraDropout, OneLinearMatchesPyTorchGivenTheSameMask) {
  const std::string python = std::getenv("PYTHON") ? std::getenv("PYTHON") : "/usr/bin/python3";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << python << " not found (set PYTHON)";
  using kernels::Transpose;
  const std::size_t rows = 6, in = 5, out = 7, r = 3;
  const double s = 2.5, p = 0.4;
  const auto x = testing::random_vec(rows * in, 1);
  const auto W = testing::random_vec(out * in, 2, 0.5);
  const auto b = testing::random_vec(out, 3);
  const auto A = testing::random_vec(r * in, 4, 0.5);
  const auto B = testing::random_vec(out * r, 5, 0.5);
  const auto dy = testing::random_vec(rows * out, 6);
  const DropoutMask mask(p, DropoutRows{1, 2, 30}, 4);

  std::vector<double> merged = W;  // W + s · B · A
  kernels::gemm(Transpose::no, Transpose::no, out, in, r, s, B.data(), r, A.data(), in, 1.0,
                merged.data(), in);
  std::vector<double> y(rows * out), dx(rows * in), dW(out * in, 0.0), dA(r * in), dB(out * r);
  kernels::linear_forward(y.data(), x.data(), merged.data(), b.data(), rows, int(in), int(out));
  const LoraModule<double> module{A.data(), B.data(), s, in, out, r};
  CpuDropoutOps<double> ops;
  lora_dropout_forward(mask, module, x.data(), rows, y.data(), out, ops);
  kernels::linear_backward(dx.data(), dW.data(), static_cast<double*>(nullptr), dy.data(), x.data(),
                           merged.data(), rows, int(in), int(out));
  // The merged weight's gradient projected (LoraAdapters::project_grads): dA = s · Bᵀ · dW,
  // dB = s · dW · Aᵀ; then the correction's.
  kernels::gemm(Transpose::yes, Transpose::no, r, in, out, s, B.data(), r, dW.data(), in, 0.0,
                dA.data(), in);
  kernels::gemm(Transpose::no, Transpose::yes, out, r, in, s, dW.data(), in, A.data(), in, 0.0,
                dB.data(), r);
  lora_dropout_backward(mask, module, x.data(), dy.data(), out, rows, dx.data(), dA.data(),
                        dB.data(), ops);

  const testing::TempDir dir;
  std::vector<double> kept(rows * in);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < in; ++j) kept[i * in + j] = mask.kept(i, j) ? 1.0 : 0.0;
  }
  testing::write_file(dir / "case.json",
                      "{\"rows\": " + std::to_string(rows) + ", \"in\": " + std::to_string(in) +
                          ", \"out\": " + std::to_string(out) + ", \"r\": " + std::to_string(r) +
                          ", \"scale\": 2.5, \"p\": 0.4}");
  for (const auto& [name, values] : {std::pair<const char*, const std::vector<double>&>{"x", x},
                                     {"weight", W},
                                     {"bias", b},
                                     {"lora_A", A},
                                     {"lora_B", B},
                                     {"mask", kept},
                                     {"dy", dy}}) {
    write_doubles(dir / name, values);
  }
  const std::string command = python + " " +
                              testing::source_path("tests/model/torch_lora_dropout.py").string() +
                              " " + dir.path().string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  expect_near(y, read_doubles(dir / "y", rows * out), "y");
  expect_near(dx, read_doubles(dir / "dx", rows * in), "dx");
  expect_near(dA, read_doubles(dir / "dA", r * in), "dA");
  expect_near(dB, read_doubles(dir / "dB", out * r), "dB");
  // Some elements were dropped and some kept: the case tests both.
  EXPECT_GT(std::count(kept.begin(), kept.end(), 0.0), 0);
  EXPECT_GT(std::count(kept.begin(), kept.end(), 1.0), 0);
}

// ---- Through the models ----------------------------------------------------------------------

constexpr int kB = 2, kT = 6, kV = 29;

ModelConfig llama_config() {
  return tiny_qwen3_config(2, 32, kV);
}

LoraOptions options(double dropout) {
  LoraOptions o{3, 7.0, {"all-linear"}};
  o.dropout = dropout;
  return o;
}

template <typename F>
std::vector<F> random_values(std::size_t n, std::uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0, scale);
  std::vector<F> values(n);
  for (auto& v : values) v = static_cast<F>(dist(gen));
  return values;
}

// One LoRA model (base weights, adapters) run forward and, optionally, backward.
template <typename F>
struct LoraRun {
  F loss = 0;
  std::vector<F> grads;  // the adapters'
};

enum class Mode { train, evaluate };

template <typename F>
class LoraFixture {
 public:
  LoraFixture(const ModelConfig& config, double dropout)
      : base_(config),
        adapters_(lora_layout(base_, options(dropout), 1)),
        lora_(base_, adapters_, options(dropout)),
        inputs_(random_tokens(kB * kT, kV, 7)),
        targets_(random_tokens(kB * kT, kV, 8)) {
    std::vector<float> initial(base_.padded_size());
    init_params(base_, 3, initial);
    base_values_.assign(initial.begin(), initial.end());
    values = random_values<F>(adapters_.padded_size(), 9, 0.2);
  }

  LoraRun<F> run(Recompute recompute, Mode mode, bool backward) const {
    LoraRun<F> result;
    result.grads.assign(adapters_.padded_size(), F(0));
    BasicFlatUnitAccess<F> inner(adapters_, values.data(), result.grads.data());
    BasicFlatUnitAccess<F> frozen(base_, base_values_.data(), nullptr);
    BasicLoraAccess<F> access(base_, frozen, lora_, adapters_, inner);
    if (mode == Mode::train) access.train_on(DropoutRows{11, 3, 2 * kT});
    const auto model = make_causal_lm<F>(base_, kB, kT, recompute);
    result.loss = model->forward(access, inputs_.data(), targets_.data());
    if (backward) model->backward(access, F(1));
    return result;
  }

  const ParamLayout& adapters() const { return adapters_; }
  std::vector<F> values;  // the adapters'

 private:
  ParamLayout base_;
  ParamLayout adapters_;
  LoraAdapters lora_;
  std::vector<F> base_values_;
  std::vector<std::int32_t> inputs_, targets_;
};

class LoraDropoutModel : public ::testing::TestWithParam<ModelConfig> {};

// The masks are fixed by the rows, so the loss is a smooth function of the adapters: its central
// differences check every correction, dx included (it reaches the earlier blocks' adapters).
TEST_P(LoraDropoutModel, GivesTheAdaptersTheGradientsOfCentralDifferences) {
  LoraFixture<double> lora(GetParam(), 0.3);
  const LoraRun<double> run = lora.run(Recompute::selective, Mode::train, true);
  EXPECT_NE(run.loss, lora.run(Recompute::selective, Mode::evaluate, false).loss)
      << "nothing was dropped";
  std::mt19937 gen(13);
  int checked = 0;
  for (const ParamTensor& tensor : lora.adapters().tensors()) {
    for (int probe = 0; probe < 2; ++probe, ++checked) {
      const std::size_t at = tensor.offset + gen() % tensor.numel;
      const double h = 1e-5, kept = lora.values[at];
      lora.values[at] = kept + h;
      const double up = lora.run(Recompute::selective, Mode::train, false).loss;
      lora.values[at] = kept - h;
      const double down = lora.run(Recompute::selective, Mode::train, false).loss;
      lora.values[at] = kept;
      const double numeric = (up - down) / (2 * h);
      ASSERT_NEAR(run.grads[at], numeric, 1e-7 + 1e-5 * std::fabs(numeric))
          << tensor.name << " element " << at - tensor.offset;
    }
  }
  EXPECT_GT(checked, 8);
}

// Under selective the adapters' backward sees the recomputed norms as their input: the same bits
// as the forward's, so the same masks' products.
TEST_P(LoraDropoutModel, IsTheSameBitsWithAndWithoutActivationCheckpointing) {
  const LoraFixture<float> lora(GetParam(), 0.2);
  const LoraRun<float> stored = lora.run(Recompute::none, Mode::train, true);
  for (const Recompute mode : {Recompute::selective, Recompute::full}) {
    const LoraRun<float> recomputed = lora.run(mode, Mode::train, true);
    EXPECT_EQ(stored.loss, recomputed.loss) << recompute_name(mode);
    EXPECT_EQ(stored.grads, recomputed.grads) << recompute_name(mode);
  }
}

TEST_P(LoraDropoutModel, ZeroOrEvaluationIsLoraWithoutDropoutToTheBit) {
  const LoraFixture<float> none(GetParam(), 0.0);
  const LoraRun<float> plain = none.run(Recompute::selective, Mode::evaluate, true);
  const LoraRun<float> zero = none.run(Recompute::selective, Mode::train, true);
  EXPECT_EQ(plain.loss, zero.loss);
  EXPECT_EQ(plain.grads, zero.grads);
  const LoraFixture<float> dropping(GetParam(), 0.2);
  EXPECT_EQ(dropping.run(Recompute::selective, Mode::evaluate, false).loss, plain.loss);
  const LoraRun<float> trained = dropping.run(Recompute::selective, Mode::train, true);
  EXPECT_NE(trained.loss, plain.loss);
  EXPECT_NE(trained.grads, plain.grads);
}

std::string family_name(const ::testing::TestParamInfo<ModelConfig>& param) {
  return param.param.family == Family::gpt2 ? "gpt2" : "llama";
}

INSTANTIATE_TEST_SUITE_P(Families, LoraDropoutModel,
                         ::testing::Values(ModelConfig::gpt2(2, 2, 8, 16, kV), llama_config()),
                         family_name);

}  // namespace
}  // namespace autotrain::model::lora_dropout_test
