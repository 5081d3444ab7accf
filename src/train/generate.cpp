#include "autotrain/train/generate.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "autotrain/config/base_model.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/json_integer.hpp"
#include "autotrain/data/sampler.hpp"
#include "autotrain/kernels/matmul.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/family.hpp"
#include "autotrain/train/adapter_folder.hpp"
#include "autotrain/train/pretrained.hpp"
#include "next_token_logits.hpp"

namespace autotrain::train {
namespace {

// The CPU model with a key/value cache: a restart prefills the whole window at once (matrix
// products over its tokens), then each call feeds one position.
class CpuNextTokenLogits final : public NextTokenLogits {
 public:
  explicit CpuNextTokenLogits(const LoadedModel& loaded)
      : model_(model::make_causal_lm<float>(*loaded.layout, 1, 1)),
        access_(*loaded.layout, loaded.params.data(), nullptr) {}

  std::span<const float> logits(std::span<const std::int32_t> window, bool restart) override {
    if (restart) {
      model_->reset_cache();
      logits_ = model_->prefill(access_, window);
    } else {
      logits_ = model_->feed_token(access_, window.back());
    }
    return logits_;
  }

 private:
  std::unique_ptr<model::CausalLM> model_;
  model::FlatUnitAccess access_;
  std::span<const float> logits_;
};

// Draws the next token from `logits` [V]: the largest at temperature 0, else among the top k
// after a softmax at the temperature. The same on every device, so a greedy GPU run and a CPU
// run of an fp32 model give the same text.
class TokenSampler {
 public:
  TokenSampler(const GenerateOptions& options, int vocab)
      : options_(options),
        vocab_(vocab),
        rng_(options.seed),
        order_(std::size_t(vocab)),
        probabilities_(std::size_t(vocab)) {}

  int next(std::span<const float> logits) {
    if (options_.temperature == 0.0) {
      return static_cast<int>(std::max_element(logits.begin(), logits.begin() + vocab_) -
                              logits.begin());
    }
    // Top-k: keep the k largest logits, softmax them at the temperature, draw one.
    const int k = options_.top_k > 0 ? std::min(options_.top_k, vocab_) : vocab_;
    std::iota(order_.begin(), order_.end(), 0);
    std::partial_sort(order_.begin(), order_.begin() + k, order_.end(),
                      [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
    const double top = logits[size_t(order_[0])];
    double total = 0;
    for (int j = 0; j < k; ++j) {
      probabilities_[size_t(j)] =
          std::exp((logits[size_t(order_[size_t(j)])] - top) / options_.temperature);
      total += probabilities_[size_t(j)];
    }
    double draw = double(rng_.next() >> 11) * 0x1.0p-53 * total;
    for (int j = 0; j < k; ++j) {
      draw -= probabilities_[size_t(j)];
      if (draw <= 0) return order_[size_t(j)];
    }
    return order_[size_t(k - 1)];
  }

 private:
  const GenerateOptions& options_;
  int vocab_;
  data::SplitMix64 rng_;
  std::vector<int> order_;
  std::vector<double> probabilities_;
};

// A PEFT adapter folder: its base model (base_model_name_or_path: a folder, or a Hub id in the
// offline Hub cache) with the adapters merged into the weights; the adapter folder's tokenizer
// when it has one (a tokenizer.json, or autotrain's gpt2 or byte named by
// autotrain_tokenizer.json).
LoadedModel load_adapter_folder(const std::filesystem::path& dir,
                                std::optional<model::QuantOptions> quantization) {
  const AdapterConfig adapter = read_adapter_config(dir);
  AT_CHECK(!adapter.base_model.empty(), (dir / kAdapterConfig).string(),
           ": base_model_name_or_path is null; the adapters need the model they were trained on");
  const config::BaseModel base = config::locate_base_model(adapter.base_model, "main", false);
  AT_CHECK(!base.folder.empty(), (dir / kAdapterConfig).string(),
           ": base_model_name_or_path: ", base.missing_message());
  AT_CHECK(!is_adapter_folder(base.folder), (dir / kAdapterConfig).string(),
           ": base_model_name_or_path ", adapter.base_model,
           " is an adapter folder too; expected the model the adapters were trained on");
  LoadedModel loaded = load_model_folder(base.folder, FolderHead::language_model, quantization);
  const LoraModel lora(loaded.layout->config(), adapter.options, 1);
  const std::vector<float> values = read_adapter_weights(dir, lora.adapters);
  merge_adapters(lora, values, loaded.params);
  if (std::filesystem::exists(dir / "tokenizer.json")) {
    loaded.tokenizer = data::make_tokenizer(dir.string(), {{}, /*parse_special_tokens=*/true});
  } else if (const std::string name = autotrain_tokenizer_name(dir); !name.empty()) {
    const bool own_vocab = std::filesystem::exists(dir / "encoder.json");
    loaded.tokenizer = data::make_tokenizer(
        name, {own_vocab ? dir : std::filesystem::path{}, /*parse_special_tokens=*/true});
  }
  return loaded;
}

}  // namespace

LoadedModel load_model_folder(const std::filesystem::path& dir, FolderHead head,
                              std::optional<model::QuantOptions> quantization) {
  AT_CHECK(head == FolderHead::language_model || !is_adapter_folder(dir), dir.string(),
           " is a PEFT adapter folder; autotrain score needs a reward model's folder "
           "(*ForSequenceClassification, as trainer: reward exports it)");
  if (is_adapter_folder(dir)) return load_adapter_folder(dir, quantization);
  const ModelFolderConfig folder = read_model_config(dir);
  const model::ModelConfig& shape = folder.shape;
  const std::string config_file = (dir / "config.json").string();
  AT_CHECK(!shape.score_head || head == FolderHead::score, config_file, ": ",
           model::classifier_architecture(shape),
           " is a reward model (a score head, no language-model head): it scores texts "
           "(autotrain score --model ",
           dir.string(), ") and does not generate");
  AT_CHECK(shape.score_head || head == FolderHead::language_model, config_file, ": ",
           shape.architecture,
           " is a language model; autotrain score needs a reward model (a "
           "*ForSequenceClassification folder with one label, as trainer: reward exports it)");
  LoadedModel loaded;
  loaded.layout = std::make_unique<model::ParamLayout>(shape, 1);
  loaded.params.assign(loaded.layout->padded_size(), 0.0f);
  const PretrainedWeights weights(dir, *loaded.layout);
  weights.fill(*loaded.layout, loaded.params, 0);
  if (quantization) model::quantize_round_trip(*loaded.layout, *quantization, loaded.params);
  // A folder with a tokenizer.json uses it; autotrain's own exports of gpt2 and byte say so.
  const std::string tokenizer =
      std::filesystem::exists(dir / "tokenizer.json") ? dir.string() : folder.tokenizer;
  const bool own_vocab = std::filesystem::exists(dir / "encoder.json");
  loaded.tokenizer = data::make_tokenizer(
      tokenizer, {own_vocab ? dir : std::filesystem::path{}, /*parse_special_tokens=*/true});
  return loaded;
}

std::string generate_text(const LoadedModel& loaded, const GenerateOptions& options) {
  return generate(loaded, options).text;
}

Generated generate(const LoadedModel& loaded, const GenerateOptions& options) {
  AT_CHECK(options.max_new_tokens >= 0, "--max-new-tokens must be >= 0");
  AT_CHECK(options.temperature >= 0, "--temperature must be >= 0 (0 = greedy)");
  const auto& layout = *loaded.layout;
  const std::size_t context = static_cast<std::size_t>(layout.config().generation_context());

  // The prompt starts as a document does: after the tokenizer's own prefix (Llama 2's <s>).
  std::vector<std::int32_t> tokens;
  if (options.document_prefix) tokens = loaded.tokenizer->document_frame(false).prefix;
  loaded.tokenizer->encode_append(options.prompt, tokens, data::TextPosition::start);
  if (tokens.empty()) {
    AT_CHECK(loaded.tokenizer->eot_token() >= 0,
             "generate: give a --prompt (the tokenizer has no end-of-text token to start from)");
    tokens.push_back(loaded.tokenizer->eot_token());
  }
  for (const auto id : tokens) {
    AT_CHECK(id < layout.config().vocab_size, "generate: the prompt has token id ", id,
             ", outside the model's vocabulary of ", layout.config().vocab_size,
             " (the folder's tokenizer is not the model's)");
  }
  const std::size_t prompt_length = tokens.size();
  std::unique_ptr<NextTokenLogits> model;
  if (options.device == Device::cuda) {
#ifdef AUTOTRAIN_HAVE_CUDA
    // The longest window this run reaches: the device model is built for no more positions.
    const std::size_t longest =
        std::min(context, prompt_length + static_cast<std::size_t>(options.max_new_tokens));
    model = make_gpu_next_token_logits(loaded, options.precision, static_cast<int>(longest));
#else
    throw Error("generate: device cuda, but this build has no CUDA");
#endif
  } else {
    model = std::make_unique<CpuNextTokenLogits>(loaded);
  }
  // The CPU's matrix products in bf16 where choose_generate_device chose it (prompts of more
  // than one token; the one-token decode steps are matrix-vector products in fp32).
  const kernels::ScopedGemmPrecision cpu_precision(options.device == Device::cpu &&
                                                           options.precision == Precision::bf16
                                                       ? kernels::GemmPrecision::bf16
                                                       : kernels::GemmPrecision::fp32);
  TokenSampler sampler(options, layout.config().vocab_size);
  std::vector<std::int32_t> stop_tokens = loaded.tokenizer->stop_tokens();
  stop_tokens.insert(stop_tokens.end(), options.stop_tokens.begin(), options.stop_tokens.end());

  // The model sees tokens[start, end), at most `context` of them. When a new token would make
  // the window longer, it restarts from the last half of the context (refed once on the CPU),
  // so the cost per token stays bounded.
  std::size_t start = prompt_length - std::min(prompt_length, context);
  bool restart = true;
  Generated generated;
  for (int i = 0; i < options.max_new_tokens; ++i) {
    const std::span<const std::int32_t> window(tokens.data() + start, tokens.size() - start);
    const int next = sampler.next(model->logits(window, restart));
    restart = false;
    if (std::find(stop_tokens.begin(), stop_tokens.end(), next) != stop_tokens.end()) {
      generated.stopped_at_end = true;
      break;
    }
    tokens.push_back(next);
    if (tokens.size() - start > context) {
      start = tokens.size() - std::max<std::size_t>(1, context / 2);
      restart = true;
    }
  }
  generated.new_tokens = static_cast<int>(tokens.size() - prompt_length);
  // Decoded with the prompt, then the prompt's text removed: decoders that drop the space
  // before the first token (Metaspace, Strip) must see where the text really starts.
  const std::string prompt =
      loaded.tokenizer->decode(std::span<const std::int32_t>(tokens.data(), prompt_length));
  std::string whole = loaded.tokenizer->decode(tokens);
  generated.text = whole.starts_with(prompt)
                       ? whole.substr(prompt.size())
                       : loaded.tokenizer->decode(std::span<const std::int32_t>(
                             tokens.data() + prompt_length, tokens.size() - prompt_length));
  return generated;
}

GenerateDevice choose_generate_device(const std::string& device,
                                      const std::string& mixed_precision) {
  AT_CHECK(device == "auto" || device == "cpu" || device == "cuda", "generate: --device '", device,
           "' is not one of auto, cpu, cuda");
  AT_CHECK(mixed_precision == "no" || mixed_precision == "bf16" || mixed_precision == "fp16",
           "generate: --mixed-precision '", mixed_precision, "' is not one of no, bf16, fp16");
  const Precision asked = mixed_precision == "bf16"   ? Precision::bf16
                          : mixed_precision == "fp16" ? Precision::fp16
                                                      : Precision::fp32;
#ifdef AUTOTRAIN_HAVE_CUDA
  const bool gpu = device != "cpu" && autotrain::gpu::device_count() > 0;
  if (device == "cuda" && !gpu) {
    throw Error(
        "generate: --device cuda, but no GPU is visible (cudaGetDeviceCount reports none: check "
        "the driver and CUDA_VISIBLE_DEVICES); use --device cpu");
  }
  if (gpu) {
    return {Device::cuda, asked,
            cat("generate: on ", gpu_generate_device_name(), " in ", precision_name(asked))};
  }
#else
  if (device == "cuda") {
    throw Error(
        "generate: --device cuda, but this build has no CUDA (rebuild with AUTOTRAIN_CUDA=on, see "
        "docs/gpu.md); use --device cpu");
  }
#endif
  if (asked == Precision::bf16 && kernels::cpu_has_native_bf16()) {
    return {Device::cpu, Precision::bf16,
            cat("generate: on the CPU in bf16 (", kernels::cpu_gemm_isa(), ")")};
  }
  std::string why;
  if (asked == Precision::fp16) {
    why = " (mixed_precision fp16 runs on GPUs only; on the CPU generate computes in fp32)";
  } else if (asked == Precision::bf16) {
    why = cat(" (mixed_precision bf16: this CPU has no native bf16, oneDNN found ",
              kernels::cpu_gemm_isa(), "; generate computes in fp32)");
  }
  return {Device::cpu, Precision::fp32, cat("generate: on the CPU in fp32", why)};
}

}  // namespace autotrain::train
