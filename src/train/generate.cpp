#include "autotrain/train/generate.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "autotrain/ckpt/safetensors.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/data/sampler.hpp"

namespace autotrain::train {
namespace {

int config_int(const nlohmann::json& config, const char* key, const std::filesystem::path& file) {
  AT_CHECK(config.contains(key) && config[key].is_number_integer(), file.string(), ": key '", key,
           "' is missing or not an integer (expected a GPT-2 config.json)");
  return config[key].get<int>();
}

}  // namespace

LoadedModel load_model_folder(const std::filesystem::path& dir) {
  const auto config_path = dir / "config.json";
  std::ifstream in(config_path);
  AT_CHECK(in.good(), "cannot read ", config_path.string(),
           " (expected a model folder written by autotrain export or train)");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(config_path.string(), ": not valid JSON: ", error.what()));
  }
  const std::string model_type = config.value("model_type", "");
  AT_CHECK(model_type == "gpt2", config_path.string(), ": model_type '", model_type,
           "' is not supported (expected gpt2)");
  const int n_positions = config.contains("n_positions")
                              ? config_int(config, "n_positions", config_path)
                              : config_int(config, "n_ctx", config_path);
  auto shape = model::ModelConfig::gpt2(config_int(config, "n_layer", config_path),
                                        config_int(config, "n_head", config_path),
                                        config_int(config, "n_embd", config_path), n_positions,
                                        config_int(config, "vocab_size", config_path));
  shape.validate();

  LoadedModel loaded;
  loaded.layout = std::make_unique<model::ParamLayout>(shape, 1);
  loaded.params.assign(loaded.layout->padded_size(), 0.0f);
  const ckpt::SafetensorsFile weights(dir / "model.safetensors");
  for (const auto& tensor : loaded.layout->tensors()) {
    // Checkpoints saved from GPT2Model (not the LM head model) lack the "transformer." prefix.
    std::string name = tensor.name;
    bool found = false;
    for (const auto& entry : weights.entries()) found = found || entry.name == name;
    if (!found && name.rfind("transformer.", 0) == 0) name = name.substr(12);
    const auto values = weights.read(name);
    const size_t rows = tensor.name == "transformer.wte.weight" ? size_t(shape.vocab_size)
                                                                : size_t(tensor.shape[0]);
    const size_t expected = rows * (tensor.shape.size() > 1 ? size_t(tensor.shape[1]) : 1);
    AT_CHECK(values.size() == expected, (dir / "model.safetensors").string(), ": tensor ", name,
             " has ", values.size(), " values, expected ", expected,
             " for the shape in config.json");
    std::copy(values.begin(), values.end(),
              loaded.params.begin() + static_cast<long>(tensor.offset));
  }
  const std::string tokenizer = config.value("autotrain_tokenizer", std::string("gpt2"));
  const bool own_vocab = std::filesystem::exists(dir / "encoder.json");
  loaded.tokenizer = data::make_tokenizer(tokenizer, own_vocab ? dir : std::filesystem::path{});
  return loaded;
}

std::string generate_text(const LoadedModel& loaded, const GenerateOptions& options) {
  AT_CHECK(options.max_new_tokens >= 0, "--max-new-tokens must be >= 0");
  AT_CHECK(options.temperature >= 0, "--temperature must be >= 0 (0 = greedy)");
  const auto& layout = *loaded.layout;
  const int context = layout.config().block_size;
  const int vocab = layout.config().vocab_size;
  model::Gpt2Model model(layout, 1, 1);
  model::FlatUnitAccess access(layout, loaded.params.data(), nullptr);

  std::vector<int32_t> tokens = loaded.tokenizer->encode(options.prompt);
  if (tokens.empty()) tokens.push_back(loaded.tokenizer->eot_token());
  const size_t prompt_length = tokens.size();
  data::SplitMix64 rng(options.seed);
  std::vector<int> order(static_cast<size_t>(vocab));
  std::vector<double> probabilities(static_cast<size_t>(vocab));
  // Key/value cache: each new token costs one position's forward. When the context is full the
  // window restarts from the last half of it (refed once), so the cost stays linear.
  size_t fed = 0;  // tokens[0, fed) have been fed since the window started
  std::span<const float> logits;
  const auto refill = [&](size_t keep) {
    model.reset_cache();
    for (fed = tokens.size() - keep; fed < tokens.size(); ++fed)
      logits = model.feed_token(access, tokens[fed]);
  };
  refill(std::min(tokens.size(), size_t(context)));
  for (int i = 0; i < options.max_new_tokens; ++i) {
    if (fed < tokens.size()) {
      if (model.cached_tokens() == context) {
        refill(std::max<size_t>(1, size_t(context) / 2));
      } else {
        logits = model.feed_token(access, tokens[fed++]);
      }
    }
    int next = 0;
    if (options.temperature == 0.0) {
      next = static_cast<int>(std::max_element(logits.begin(), logits.begin() + vocab) -
                              logits.begin());
    } else {
      // Top-k: keep the k largest logits, softmax them at the temperature, draw one.
      const int k = options.top_k > 0 ? std::min(options.top_k, vocab) : vocab;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
      const double top = logits[size_t(order[0])];
      double total = 0;
      for (int j = 0; j < k; ++j) {
        probabilities[size_t(j)] =
            std::exp((logits[size_t(order[size_t(j)])] - top) / options.temperature);
        total += probabilities[size_t(j)];
      }
      double draw = double(rng.next() >> 11) * 0x1.0p-53 * total;
      next = order[size_t(k - 1)];
      for (int j = 0; j < k; ++j) {
        draw -= probabilities[size_t(j)];
        if (draw <= 0) {
          next = order[size_t(j)];
          break;
        }
      }
    }
    if (next == loaded.tokenizer->eot_token()) break;
    tokens.push_back(next);
  }
  return loaded.tokenizer->decode(
      std::vector<int32_t>(tokens.begin() + static_cast<long>(prompt_length), tokens.end()));
}

}  // namespace autotrain::train
