// hf_probe FOLDER TOKENS OUT: what our model of the folder's family computes for a Hugging Face
// model folder, for the PyTorch references (tests/e2e/torch_gpt2.py, torch_llama.py, and for a
// PEFT adapter folder torch_lora.py) to compare with. Loads FOLDER the way generate does
// (load_model_folder: PretrainedWeights); an adapter folder is run over its base model through
// LoRA's unit hooks (model::LoraAccess). Reads TOKENS (one line of space-separated ids) and
// writes into the folder OUT:
//   logits.f32   [T, V] the logits at every position of tokens[0 .. T) (T = count - 1)
//   loss.txt     the mean cross-entropy of tokens[1 .. T] after them
//   grads.f32    the flat gradient buffer of that loss (of the adapters for an adapter folder);
//                layout.json says where each tensor is
//   greedy.txt   20 tokens decoded greedily after tokens (key/value cache, as generate runs)
// A fifth argument int4, int4-dq (double quantization) or int8 runs the (base) model with its
// block weights quantized and dequantized as a QLoRA run holds them (model::quantize_round_trip).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "autotrain/config/base_model.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/model/lora_access.hpp"
#include "autotrain/train/adapter_folder.hpp"
#include "autotrain/train/generate.hpp"

namespace {

void write_floats(const std::string& path, const float* data, std::size_t count) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * 4));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autotrain;
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: hf_probe FOLDER TOKENS OUT [int4|int4-dq|int8]\n";
    return 2;
  }
  try {
    std::optional<model::QuantOptions> quantization;
    if (argc == 5) {
      const std::string name = argv[4];
      quantization = model::QuantOptions{
          kernels::parse_quant_kind(name == "int4-dq" ? "int4" : name, "quantization"),
          name == "int4-dq"};
    }
    const bool adapter = train::is_adapter_folder(argv[1]);
    std::unique_ptr<train::LoraModel> lora;
    std::vector<float> adapter_values;
    train::LoadedModel loaded;
    if (adapter) {
      const train::AdapterConfig config = train::read_adapter_config(argv[1]);
      loaded = train::load_model_folder(
          config::locate_base_model(config.base_model, "main", false).folder,
          train::FolderHead::language_model, quantization);
      lora = std::make_unique<train::LoraModel>(loaded.layout->config(), config.options, 1);
      adapter_values = train::read_adapter_weights(argv[1], lora->adapters);
    } else {
      loaded = train::load_model_folder(argv[1], train::FolderHead::language_model, quantization);
    }
    const model::ParamLayout& layout = *loaded.layout;
    const model::ParamLayout& trained = adapter ? lora->adapters : layout;
    std::vector<std::int32_t> tokens;
    std::ifstream in(argv[2]);
    for (std::int32_t id; in >> id;) tokens.push_back(id);
    const int T = static_cast<int>(tokens.size()) - 1;
    const int V = layout.config().vocab_size;
    const std::string out = argv[3];

    const auto model = model::make_causal_lm<float>(layout, 1, T);
    model::CausalLM& gpt = *model;
    std::vector<float> grads(trained.padded_size(), 0.0f);
    model::FlatUnitAccess plain(layout, loaded.params.data(), grads.data());
    model::FlatUnitAccess adapters(trained, adapter_values.data(), grads.data());
    model::FlatUnitAccess frozen(layout, loaded.params.data(), nullptr);
    std::optional<model::LoraAccess> with_lora;
    if (adapter) with_lora.emplace(layout, frozen, lora->lora, trained, adapters);
    model::UnitAccess& access = adapter ? static_cast<model::UnitAccess&>(*with_lora) : plain;
    std::vector<float> logits;
    for (int t = 1; t <= T; ++t) {
      const auto row = gpt.next_token_logits(
          access, std::span<const std::int32_t>(tokens.data(), static_cast<std::size_t>(t)));
      logits.insert(logits.end(), row.begin(), row.begin() + V);
    }
    write_floats(out + "/logits.f32", logits.data(), logits.size());
    const float loss = gpt.forward(access, tokens.data(), tokens.data() + 1);
    gpt.backward(access, 1.0f);
    std::ofstream(out + "/loss.txt") << std::setprecision(9) << loss << "\n";
    write_floats(out + "/grads.f32", grads.data(), grads.size());
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& tensor : trained.tensors()) {
      tensors.push_back(
          {{"name", tensor.name}, {"offset", tensor.offset}, {"shape", tensor.shape}});
    }
    std::ofstream(out + "/layout.json") << tensors.dump() << "\n";

    gpt.reset_cache();
    std::span<const float> next;
    for (const std::int32_t token : tokens) next = gpt.feed_token(access, token);
    std::ofstream greedy(out + "/greedy.txt");
    for (int i = 0; i < 20; ++i) {
      const auto best = static_cast<std::int32_t>(std::max_element(next.begin(), next.begin() + V) -
                                                  next.begin());
      greedy << best << (i + 1 < 20 ? " " : "\n");
      next = gpt.feed_token(access, best);
    }
  } catch (const std::exception& error) {
    std::cerr << "hf_probe: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
